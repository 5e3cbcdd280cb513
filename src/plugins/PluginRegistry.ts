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
import { type ModelPlugin, type PluginModel, pluginShapeProblems } from "./ModelPlugin.ts"
import { makeTextPlugin } from "./text/TextPlugin.ts"

export interface RegisteredModel {
  readonly plugin: ModelPlugin
  readonly model: PluginModel
}

/** The output cap used for holds when neither the request nor the model config names one. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096

export class PluginRegistry extends Context.Service<
  PluginRegistry,
  {
    readonly lookup: (modelId: string) => RegisteredModel | undefined
    readonly plugins: ReadonlyMap<string, ModelPlugin>
  }
>()("tollgate/plugins/PluginRegistry") {}

/** Imports the operator's plugin modules; each exports a plugin as its default export (or as `plugin`). */
export const loadPlugins = (specifiers: ReadonlyArray<string>) =>
  Effect.forEach(specifiers, (specifier) =>
    Effect.gen(function* () {
      const module = yield* Effect.tryPromise({
        try: () => import(specifier) as Promise<Record<string, unknown>>,
        catch: (error) =>
          new OperatorConfigError({
            source: specifier,
            issues: [`plugins: cannot load ${specifier}: ${error instanceof Error ? error.message : String(error)}`]
          })
      })
      const candidate = module.default ?? module.plugin
      const problems = pluginShapeProblems(candidate)
      if (problems.length > 0) {
        return yield* new OperatorConfigError({
          source: specifier,
          issues: problems.map((p) => `plugins: ${specifier}: ${p}`)
        })
      }
      return candidate as ModelPlugin
    })
  )

export const buildRegistry = (
  config: OperatorConfigData,
  plugins: ReadonlyArray<ModelPlugin>,
  ownedBy: (modelId: string) => string,
  created: number
) =>
  Effect.gen(function* () {
    const byId = new Map<string, ModelPlugin>()
    for (const plugin of plugins) byId.set(plugin.id, plugin)
    yield* OperatorConfig.validatePlugins(
      config,
      new Map([...byId].map(([id, plugin]) => [id, plugin.pricingKeys] as const)),
      "models"
    )
    const entries = new Map<string, RegisteredModel>()
    const catalog: Array<CatalogModel> = []
    const unavailable: Array<string> = []
    config.models.forEach((model, index) => {
      const plugin = byId.get(model.plugin)
      if (plugin === undefined) {
        // A built-in family this build does not serve yet: say so at start instead of failing on the first call.
        unavailable.push(`models[${index}].plugin: '${model.plugin}' is not available in this build`)
        return
      }
      entries.set(model.id, {
        plugin,
        model: {
          id: model.id,
          upstreams: model.upstreams,
          upstreamModel: model.upstreamModel,
          pricing: model.pricing,
          maxOutputTokens: model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS
        }
      })
      catalog.push({ id: model.id, ownedBy: ownedBy(model.id), created, displayName: model.id })
    })
    if (unavailable.length > 0) return yield* new OperatorConfigError({ source: "models", issues: unavailable })
    return { entries, catalog, plugins: byId }
  })

/** Registry + catalog from the loaded operator config, with the built-in plugins and the configured ones. */
export const layerFrom = (ownedBy: (modelId: string) => string) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const config = yield* OperatorConfig
      const client = yield* UpstreamClient
      const external = yield* loadPlugins(config.plugins)
      const built = yield* buildRegistry(config, [makeTextPlugin(client), ...external], ownedBy, 1_767_225_600)
      return Context.make(
        PluginRegistry,
        PluginRegistry.of({ lookup: (id) => built.entries.get(id), plugins: built.plugins })
      ).pipe(Context.add(ModelCatalog, ModelCatalog.of({ models: built.catalog })))
    })
  )
