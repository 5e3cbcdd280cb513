import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { makeGuardedFetcher } from "../../../src/adapters/fetch/GuardedFetcher.ts"
import { ImageFetcherService } from "../../../src/plugins/chat-image/ImageInputs.ts"
import type { ModelPlugin, PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import { pluginShapeProblems } from "@tollgate/plugin-spec/shape"
import { makeLookups, wrongEndpointMessage, type ResolvedModel } from "../../../src/app/PluginRegistry.ts"
import { builtinPlugins } from "../../../src/PluginsLayer.ts"
import type { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"

const client = { request: () => Effect.die("not called") } as unknown as UpstreamClient["Service"]
const plugins = builtinPlugins(client, () => Effect.die("not called"), makeGuardedFetcher())
const byId = (id: string) => plugins.find((plugin) => plugin.id === id) as ModelPlugin

const model = (id: string): PluginModel => ({
  id,
  upstreams: [],
  upstreamModel: id,
  pricing: { output: 40_000_000n },
  maxOutputTokens: 4096
})

describe("the images plugin kind", () => {
  it("passes the registry's shape check next to the chat kind, and a half-made images plugin does not", () => {
    for (const plugin of plugins) assert.deepStrictEqual(pluginShapeProblems(plugin), [], plugin.id)
    const { generate: _generate, ...incomplete } = byId("dedicated-image") as Extract<ModelPlugin, { kind: "images" }>
    assert.deepStrictEqual(pluginShapeProblems(incomplete), ["generate: expected a function"])
    // "video" is not a built-in kind ("videos" is): as a new kind it would need an endpoint and a request schema.
    assert.deepStrictEqual(
      pluginShapeProblems({ ...incomplete, generate: () => 0, kind: "video" }).map((problem) => problem.split(":")[0]),
      ["endpoint", "request", "invoke"]
    )
  })

  it("declares the built-in pricing keys of each family", () => {
    assert.deepStrictEqual(byId("chat-image").pricingKeys, { allowed: ["perCall"], required: ["perCall"] })
    assert.deepStrictEqual(byId("dedicated-image").pricingKeys, { allowed: ["input", "output"], required: ["output"] })
  })

  it("resolves any model with its kind; the chat lookup sees chat models only", () => {
    const images = byId("dedicated-image")
    const chat = byId("chat-image")
    const entries = new Map<string, ResolvedModel>([
      ["imggen-2", { kind: "images", plugin: images, model: model("imggen-2") } as ResolvedModel],
      ["imgchat", { kind: "chat", plugin: chat, model: model("imgchat") } as ResolvedModel]
    ])
    const { lookup, resolve } = makeLookups(entries)
    assert.strictEqual(resolve("imggen-2")?.kind, "images")
    assert.strictEqual(lookup("imgchat")?.plugin, chat)
    // The chat gateway refuses an images model before any hold, naming its endpoint (tested over HTTP).
    assert.isUndefined(lookup("imggen-2"))
    const imggen = resolve("imggen-2") as ResolvedModel
    assert.include(wrongEndpointMessage("imggen-2", imggen, "POST /v1/chat/completions"), "POST /v1/images/generations")
    assert.isUndefined(resolve("nope"))
  })

  it.effect("the refusing fetcher says to send a data URI", () =>
    Effect.gen(function* () {
      const fetcher = yield* Effect.service(ImageFetcherService)
      const exit = yield* Effect.exit(fetcher("https://example.com/a.png", new AbortController().signal))
      assert.isTrue(Exit.isFailure(exit))
    }).pipe(Effect.provide(ImageFetcherService.refuseAll))
  )
})
