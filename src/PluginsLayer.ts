/**
 * The plugin registry and catalog as the composition root builds them: the built-in families over the upstream
 * client and the guarded fetchers, plus the modules the operator config lists, checked and registered together.
 */
import { Context, Effect, Layer } from "effect"
import { GuardedFetcher } from "./app/ports/GuardedFetcher.ts"
import { UpstreamClient } from "./adapters/upstream/UpstreamClient.ts"
import { ModelCatalog } from "./app/ModelCatalog.ts"
import { OperatorConfig } from "./app/OperatorConfig.ts"
import { PluginHttp } from "./app/PluginHttp.ts"
import { buildRegistry, loadPlugins, makeLookups, PluginRegistry } from "./app/PluginRegistry.ts"
import { makeSpeechPlugin, SPEECH_PRICE_KEYS } from "./plugins/audio/SpeechPlugin.ts"
import { makeTranscriptionPlugin, TRANSCRIPTION_PRICE_KEYS } from "./plugins/audio/TranscriptionPlugin.ts"
import { makeChatImagePlugin, CHAT_IMAGE_PRICE_KEYS } from "./plugins/chat-image/ChatImagePlugin.ts"
import { type ImageFetcher, ImageFetcherService } from "./plugins/chat-image/ImageInputs.ts"
import { makeDedicatedImagePlugin, DEDICATED_IMAGE_PRICE_KEYS } from "./plugins/dedicated-image/DedicatedImagePlugin.ts"
import { makeEmbeddingsPlugin, EMBEDDINGS_PRICE_KEYS } from "./plugins/embeddings/EmbeddingsPlugin.ts"
import type { ModelPlugin, PriceKeys } from "./plugins/ModelPlugin.ts"
import { makeTextPlugin } from "./plugins/text/TextPlugin.ts"
import { TEXT_PRICE_KEYS } from "./plugins/text/TextPricing.ts"
import { makeUpstreamHttp } from "./plugins/UpstreamHttp.ts"
import { countText } from "./adapters/tokenizer/Tokenizer.ts"
import { importPluginModule } from "./PluginModules.ts"
import { makeVideoPlugin, VIDEO_PRICE_KEYS } from "./plugins/video/VideoPlugin.ts"

/** The built-in families' ids and the prices each bills by, known before any module loads. */
export const builtinPriceKeys: ReadonlyMap<string, PriceKeys> = new Map([
  ["text", TEXT_PRICE_KEYS],
  ["chat-image", CHAT_IMAGE_PRICE_KEYS],
  ["dedicated-image", DEDICATED_IMAGE_PRICE_KEYS],
  ["video", VIDEO_PRICE_KEYS],
  ["embeddings", EMBEDDINGS_PRICE_KEYS],
  ["transcription", TRANSCRIPTION_PRICE_KEYS],
  ["speech", SPEECH_PRICE_KEYS]
])

/** The built-in families over one upstream client, the fetcher of user image links and the guarded fetcher. */
export const builtinPlugins = (
  client: UpstreamClient["Service"],
  fetcher: ImageFetcher,
  links: GuardedFetcher["Service"]
): ReadonlyArray<ModelPlugin> => [
  makeTextPlugin(client),
  makeChatImagePlugin(client, fetcher),
  makeDedicatedImagePlugin(client, fetcher),
  makeVideoPlugin(client, links),
  makeEmbeddingsPlugin(client),
  makeTranscriptionPlugin(client),
  makeSpeechPlugin(client)
]

/** Registry + catalog + the plugins' HTTP capability, from the loaded operator config and the configured modules. */
export const layerFrom = (ownedBy: (modelId: string) => string) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const config = yield* OperatorConfig
      const client = yield* UpstreamClient
      const fetcher = yield* ImageFetcherService
      const links = yield* GuardedFetcher
      const http = makeUpstreamHttp(client, config.upstreams)
      const external = yield* loadPlugins(
        config.plugins,
        { http, tokens: { encoding: "o200k_base", count: countText } },
        importPluginModule
      )
      const built = yield* buildRegistry(
        config,
        [...builtinPlugins(client, fetcher, links), ...external],
        ownedBy,
        1_767_225_600
      )
      return Context.make(
        PluginRegistry,
        PluginRegistry.of({ ...makeLookups(built.entries), plugins: built.plugins, endpoints: built.endpoints })
      ).pipe(Context.add(ModelCatalog, ModelCatalog.of({ models: built.catalog })), Context.add(PluginHttp, http))
    })
  )
