/**
 * Maps a model id to its plugin and upstreams. Built once at start from the operator config and the loaded plugins
 * (ours and third parties'), after checking that every model names a known plugin and prices only by the keys that
 * plugin bills by.
 */
import { Context, Effect, Layer } from "effect"
import { UpstreamClient } from "../adapters/upstream/UpstreamClient.ts"
import type { CatalogModel } from "../app/ModelCatalog.ts"
import { ModelCatalog } from "../app/ModelCatalog.ts"
import { OperatorConfig, type OperatorConfigData, OperatorConfigError } from "../app/OperatorConfig.ts"
import { makeSpeechPlugin } from "./audio/SpeechPlugin.ts"
import { makeTranscriptionPlugin } from "./audio/TranscriptionPlugin.ts"
import { makeChatImagePlugin } from "./chat-image/ChatImagePlugin.ts"
import { type ImageFetcher, ImageFetcherService } from "./chat-image/ImageInputs.ts"
import { GuardedFetcher } from "../adapters/fetch/GuardedFetcher.ts"
import { makeDedicatedImagePlugin } from "./dedicated-image/DedicatedImagePlugin.ts"
import { makeEmbeddingsPlugin } from "./embeddings/EmbeddingsPlugin.ts"
import {
  type ChatPlugin,
  type ImagesPlugin,
  type VideosPlugin,
  type EmbeddingsPlugin,
  type TranscriptionPlugin,
  type SpeechPlugin,
  type ModelPlugin,
  type PluginModel,
  pluginShapeProblems
} from "./ModelPlugin.ts"
import { makeTextPlugin } from "./text/TextPlugin.ts"
import { makeVideoPlugin } from "./video/VideoPlugin.ts"

/** A model served on the chat endpoints. */
export interface RegisteredModel {
  readonly plugin: ChatPlugin
  readonly model: PluginModel
}

/** Any model with its plugin; `kind` says which endpoints serve it. */
export type ResolvedModel =
  | { readonly kind: "chat"; readonly plugin: ChatPlugin; readonly model: PluginModel }
  | { readonly kind: "images"; readonly plugin: ImagesPlugin; readonly model: PluginModel }
  | { readonly kind: "videos"; readonly plugin: VideosPlugin; readonly model: PluginModel }
  | { readonly kind: "embeddings"; readonly plugin: EmbeddingsPlugin; readonly model: PluginModel }
  | { readonly kind: "transcription"; readonly plugin: TranscriptionPlugin; readonly model: PluginModel }
  | { readonly kind: "speech"; readonly plugin: SpeechPlugin; readonly model: PluginModel }

/** Where a model of each plugin kind is called; the other endpoints answer 400 with this address. */
export const ENDPOINT_OF_KIND = {
  chat: "/v1/chat/completions",
  images: "/v1/images/generations",
  videos: "/v1/videos",
  embeddings: "/v1/embeddings",
  transcription: "/v1/audio/transcriptions",
  speech: "/v1/audio/speech"
} as const

/**
 * What a model is, in the words its wrong-endpoint errors use, and how it is called. The chat kind covers two families
 * a client must not confuse: text models and the chat-style image models.
 */
const describeModel = (modelId: string, entry: ResolvedModel): { readonly what: string; readonly how: string } => {
  const native = `POST /v1beta/models/${modelId}:generateContent`
  switch (entry.kind) {
    case "chat":
      return entry.plugin.family === "chat-image"
        ? { what: "a chat-style image model", how: `call POST ${ENDPOINT_OF_KIND.chat} (or the native ${native})` }
        : { what: "a text (chat) model", how: `call POST ${ENDPOINT_OF_KIND.chat}, POST /v1/messages or ${native}` }
    case "images":
      return {
        what: "a dedicated image model",
        how: `call POST ${ENDPOINT_OF_KIND.images} (or POST /v1/images/edits to edit an image)`
      }
    case "videos":
      return {
        what: "a video model",
        how: `submit a task with POST ${ENDPOINT_OF_KIND.videos}, then poll GET /v1/videos/{id}`
      }
    case "embeddings":
      return { what: "an embeddings model", how: `call POST ${ENDPOINT_OF_KIND.embeddings}` }
    case "transcription":
      return { what: "a transcription model", how: `call POST ${ENDPOINT_OF_KIND.transcription}` }
    case "speech":
      return { what: "a text-to-speech model", how: `call POST ${ENDPOINT_OF_KIND.speech}` }
  }
}

/** Why `called` (such as `POST /v1/videos`) refuses this model: what the model is, and the endpoint that serves it. */
export const wrongEndpointMessage = (modelId: string, entry: ResolvedModel, called: string): string => {
  const { what, how } = describeModel(modelId, entry)
  return `'${modelId}' is ${what}, which ${called} does not serve: ${how}`
}

/** The output cap used for holds when neither the request nor the model config names one. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096

export class PluginRegistry extends Context.Service<
  PluginRegistry,
  {
    /** A model for the chat endpoints; undefined for a model of another kind. */
    readonly lookup: (modelId: string) => RegisteredModel | undefined
    /** Any model, with the kind of its plugin. */
    readonly resolve: (modelId: string) => ResolvedModel | undefined
    readonly plugins: ReadonlyMap<string, ModelPlugin>
  }
>()("tollgate/plugins/PluginRegistry") {}

/** Imports the operator's plugin modules; each exports a plugin as its default export (or as `plugin`). */
type Loaded =
  | { readonly _tag: "Loaded"; readonly plugin: ModelPlugin }
  | { readonly _tag: "Broken"; readonly issues: ReadonlyArray<string> }

export const loadPlugins = (specifiers: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    // Every module is tried, so an operator sees every broken one at once.
    const loaded = yield* Effect.forEach(specifiers, (specifier) =>
      Effect.tryPromise({
        try: () => import(specifier) as Promise<Record<string, unknown>>,
        catch: (error) => `plugins: cannot load ${specifier}: ${error instanceof Error ? error.message : String(error)}`
      }).pipe(
        Effect.map((module): Loaded => {
          const candidate = module.default ?? module.plugin
          const problems = pluginShapeProblems(candidate)
          return problems.length > 0
            ? { _tag: "Broken", issues: problems.map((p) => `plugins: ${specifier}: ${p}`) }
            : { _tag: "Loaded", plugin: candidate as ModelPlugin }
        }),
        Effect.catch((issue: string) => Effect.succeed<Loaded>({ _tag: "Broken", issues: [issue] }))
      )
    )
    const issues = loaded.flatMap((result) => (result._tag === "Broken" ? result.issues : []))
    if (issues.length > 0) return yield* new OperatorConfigError({ source: "plugins", issues })
    return loaded.flatMap((result) => (result._tag === "Loaded" ? [result.plugin] : []))
  })

/** A model with its plugin, tagged by the plugin's kind. */
const resolvedOf = (plugin: ModelPlugin, model: PluginModel): ResolvedModel => {
  switch (plugin.kind) {
    case "chat":
      return { kind: "chat", plugin, model }
    case "images":
      return { kind: "images", plugin, model }
    case "videos":
      return { kind: "videos", plugin, model }
    case "embeddings":
      return { kind: "embeddings", plugin, model }
    case "transcription":
      return { kind: "transcription", plugin, model }
    case "speech":
      return { kind: "speech", plugin, model }
  }
}

export const buildRegistry = (
  config: OperatorConfigData,
  plugins: ReadonlyArray<ModelPlugin>,
  ownedBy: (modelId: string) => string,
  created: number
) =>
  Effect.gen(function* () {
    const byId = new Map<string, ModelPlugin>()
    const taken: Array<string> = []
    for (const plugin of plugins) {
      // A plugin never silently replaces another (ours or a third party's) under the same id.
      if (byId.has(plugin.id)) taken.push(`plugins: id '${plugin.id}' is already declared by another plugin`)
      else byId.set(plugin.id, plugin)
    }
    if (taken.length > 0) return yield* new OperatorConfigError({ source: "plugins", issues: taken })
    yield* OperatorConfig.validatePlugins(
      config,
      new Map([...byId].map(([id, plugin]) => [id, plugin.pricingKeys] as const)),
      "models"
    )
    const entries = new Map<string, ResolvedModel>()
    const catalog: Array<CatalogModel> = []
    const unavailable: Array<string> = []
    config.models.forEach((model, index) => {
      const plugin = byId.get(model.plugin)
      if (plugin === undefined) {
        // A built-in family this build does not serve yet: say so at start instead of failing on the first call.
        unavailable.push(`models[${index}].plugin: '${model.plugin}' is not available in this build`)
        return
      }
      const registered: PluginModel = {
        id: model.id,
        upstreams: model.upstreams,
        upstreamModel: model.upstreamModel,
        pricing: model.pricing,
        maxOutputTokens: model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS
      }
      entries.set(model.id, resolvedOf(plugin, registered))
      catalog.push({ id: model.id, ownedBy: ownedBy(model.id), created, displayName: model.id })
    })
    if (unavailable.length > 0) return yield* new OperatorConfigError({ source: "models", issues: unavailable })
    return { entries, catalog, plugins: byId }
  })

/** Lookups over the entries: `lookup` sees chat models only; `resolve` any model with its kind. */
export const makeLookups = (entries: ReadonlyMap<string, ResolvedModel>) => ({
  lookup: (id: string): RegisteredModel | undefined => {
    const entry = entries.get(id)
    return entry?.kind === "chat" ? { plugin: entry.plugin, model: entry.model } : undefined
  },
  resolve: (id: string): ResolvedModel | undefined => entries.get(id)
})

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

/** Registry + catalog from the loaded operator config, with the built-in plugins and the configured ones. */
export const layerFrom = (ownedBy: (modelId: string) => string) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const config = yield* OperatorConfig
      const client = yield* UpstreamClient
      const fetcher = yield* ImageFetcherService
      const links = yield* GuardedFetcher
      const external = yield* loadPlugins(config.plugins)
      const built = yield* buildRegistry(
        config,
        [...builtinPlugins(client, fetcher, links), ...external],
        ownedBy,
        1_767_225_600
      )
      return Context.make(
        PluginRegistry,
        PluginRegistry.of({ ...makeLookups(built.entries), plugins: built.plugins })
      ).pipe(Context.add(ModelCatalog, ModelCatalog.of({ models: built.catalog })))
    })
  )
