/**
 * Maps a model id to its plugin and upstreams. Built once at start from the operator config and the loaded plugins
 * (ours and third parties'), after checking that every model names a known plugin and prices only by the keys that
 * plugin declares. A plugin of a new kind brings its endpoint: the registry lists those so the edge can route them.
 */
import { clip } from "../domain/Quoted.ts"
import type {
  ChatPlugin,
  EmbeddingsPlugin,
  EndpointPlugin,
  ImagesPlugin,
  ModelPlugin,
  PluginModel,
  SpeechPlugin,
  TranscriptionPlugin,
  VideosPlugin
} from "@tollgate/plugin-spec"
import { Context, Effect } from "effect"
import type { OperatorConfigData } from "./config/OperatorConfigData.ts"
import type { CatalogModel } from "./ModelCatalog.ts"
import { OperatorConfig, OperatorConfigError } from "./OperatorConfig.ts"
import { isBuiltinKind, pluginShapeProblems } from "@tollgate/plugin-spec/shape"
import { atBoundary, type Capabilities } from "./PluginBoundary.ts"

/** A model served on the chat endpoints. */
export interface RegisteredModel {
  readonly plugin: ChatPlugin
  readonly model: PluginModel
}

/** Any model with its plugin; `kind` says which endpoints serve it (`endpoint`: a new kind's own endpoint). */
export type ResolvedModel = (
  | { readonly kind: "chat"; readonly plugin: ChatPlugin; readonly model: PluginModel }
  | { readonly kind: "images"; readonly plugin: ImagesPlugin; readonly model: PluginModel }
  | { readonly kind: "videos"; readonly plugin: VideosPlugin; readonly model: PluginModel }
  | { readonly kind: "embeddings"; readonly plugin: EmbeddingsPlugin; readonly model: PluginModel }
  | { readonly kind: "transcription"; readonly plugin: TranscriptionPlugin; readonly model: PluginModel }
  | { readonly kind: "speech"; readonly plugin: SpeechPlugin; readonly model: PluginModel }
  | { readonly kind: "endpoint"; readonly plugin: EndpointPlugin; readonly model: PluginModel }
) & {
  /** The model's `batchDiscountPercent` (its batch lines' prices: app/batch/BatchPricing.ts); the gateway's, not a plugin's. */
  readonly batchDiscountPercent?: number | undefined
}

/** A new kind the gateway serves, the path its plugins declared, and the model a request naming none is for. */
export interface EndpointKind {
  readonly kind: string
  readonly path: string
  readonly defaultModel?: string | undefined
}

/** Where a model of each built-in kind is called; the other endpoints answer 400 with this address. */
export const ENDPOINT_OF_KIND = {
  chat: "/v1/chat/completions",
  images: "/v1/images/generations",
  videos: "/v1/videos",
  embeddings: "/v1/embeddings",
  transcription: "/v1/audio/transcriptions",
  speech: "/v1/audio/speech"
} as const

/** Paths the gateway serves itself; a new kind may not declare one of them. */
const RESERVED_PATHS: ReadonlySet<string> = new Set([
  ...Object.values(ENDPOINT_OF_KIND),
  "/v1/messages",
  "/v1/messages/count_tokens",
  "/v1/responses",
  "/v1/responses/input_tokens",
  "/v1/images/edits",
  "/v1/models",
  "/v1/usage"
])

/** The path a model is called on. */
export const endpointOf = (entry: ResolvedModel): string =>
  entry.kind === "endpoint" ? entry.plugin.endpoint.path : ENDPOINT_OF_KIND[entry.kind]

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
        : {
            what: "a text (chat) model",
            how: `call POST ${ENDPOINT_OF_KIND.chat}, POST /v1/responses, POST /v1/messages or ${native}`
          }
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
    case "endpoint":
      return { what: `a ${entry.plugin.kind} model`, how: `call POST ${entry.plugin.endpoint.path}` }
  }
}

/** Why `called` (such as `POST /v1/videos`) refuses this model: what the model is, and the endpoint that serves it. */
export const wrongEndpointMessage = (modelId: string, entry: ResolvedModel, called: string): string => {
  const { what, how } = describeModel(modelId, entry)
  return `'${clip(modelId)}' is ${what}, which ${called} does not serve: ${how}`
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
    /** The new kinds the loaded plugins declare, each with its endpoint. */
    readonly endpoints: ReadonlyArray<EndpointKind>
  }
>()("tollgate/app/PluginRegistry") {}

type Loaded =
  | { readonly _tag: "Loaded"; readonly plugin: ModelPlugin }
  | { readonly _tag: "Broken"; readonly issues: ReadonlyArray<string> }

/**
 * Imports the operator's plugin modules; each exports a plugin as its default export (or as `plugin`). Each is wrapped
 * at the boundary (app/PluginBoundary.ts): it never sees a key, its calls carry `http`, its failures are read by shape.
 */
export const loadPlugins = (
  specifiers: ReadonlyArray<string>,
  capabilities: Capabilities = {},
  importModule: (specifier: string) => Promise<Record<string, unknown>> = (specifier) => import(specifier)
) =>
  Effect.gen(function* () {
    // Every module is tried, so an operator sees every broken one at once.
    const loaded = yield* Effect.forEach(specifiers, (specifier) =>
      Effect.tryPromise({
        try: () => importModule(specifier),
        catch: (error) => `plugins: cannot load ${specifier}: ${error instanceof Error ? error.message : String(error)}`
      }).pipe(
        Effect.map((module): Loaded => {
          const candidate = module.default ?? module.plugin
          const problems = pluginShapeProblems(candidate)
          return problems.length > 0
            ? { _tag: "Broken", issues: problems.map((problem) => `plugins: ${specifier}: ${problem}`) }
            : { _tag: "Loaded", plugin: atBoundary(candidate as ModelPlugin, capabilities) }
        }),
        Effect.catch((issue: string) => Effect.succeed<Loaded>({ _tag: "Broken", issues: [issue] }))
      )
    )
    const issues = loaded.flatMap((result) => (result._tag === "Broken" ? result.issues : []))
    if (issues.length > 0) return yield* new OperatorConfigError({ source: "plugins", issues })
    return loaded.flatMap((result) => (result._tag === "Loaded" ? [result.plugin] : []))
  })

/** A model with its plugin, tagged by the plugin's kind. */
const resolvedOf = (plugin: ModelPlugin, model: PluginModel): ResolvedModel =>
  isBuiltinKind(plugin.kind)
    ? ({ kind: plugin.kind, plugin, model } as ResolvedModel)
    : { kind: "endpoint", plugin: plugin as EndpointPlugin, model }

/**
 * The new kinds and their paths. Plugins of one kind must agree on its path, and no two kinds may share one; a path
 * the gateway serves itself is refused.
 */
const endpointKinds = (plugins: ReadonlyArray<ModelPlugin>) => {
  const byKind = new Map<string, string>()
  const defaults = new Map<string, string>()
  const issues: Array<string> = []
  for (const plugin of plugins) {
    if (isBuiltinKind(plugin.kind)) continue
    const path = (plugin as EndpointPlugin).endpoint.path
    const known = byKind.get(plugin.kind)
    if (known !== undefined && known !== path) {
      issues.push(`plugins: '${plugin.id}' serves kind '${plugin.kind}' at ${path}, another plugin at ${known}`)
    }
    if (RESERVED_PATHS.has(path))
      issues.push(`plugins: '${plugin.id}' declares ${path}, which the gateway serves itself`)
    const other = [...byKind].find(([kind, taken]) => taken === path && kind !== plugin.kind)
    if (other !== undefined) issues.push(`plugins: '${plugin.id}' declares ${path}, taken by kind '${other[0]}'`)
    if (known === undefined) byKind.set(plugin.kind, path)
    const fallback = (plugin as EndpointPlugin).defaultModel
    const declared = defaults.get(plugin.kind)
    if (fallback !== undefined && declared !== undefined && declared !== fallback) {
      issues.push(
        `plugins: '${plugin.id}' defaults kind '${plugin.kind}' to model '${fallback}', another plugin to '${declared}'`
      )
    }
    if (fallback !== undefined && declared === undefined) defaults.set(plugin.kind, fallback)
  }
  const endpoints = [...byKind].map(([kind, path]) => {
    const defaultModel = defaults.get(kind)
    return defaultModel === undefined ? { kind, path } : { kind, path, defaultModel }
  })
  return { endpoints, issues }
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
    const { endpoints, issues } = endpointKinds([...byId.values()])
    if (taken.length + issues.length > 0) {
      return yield* new OperatorConfigError({ source: "plugins", issues: [...taken, ...issues] })
    }
    yield* OperatorConfig.validatePlugins(
      config,
      new Map([...byId].map(([id, plugin]) => [id, plugin.pricingKeys] as const)),
      "models"
    )
    const entries = new Map<string, ResolvedModel>()
    const catalog: Array<CatalogModel> = []
    config.models.forEach((model) => {
      const plugin = byId.get(model.plugin)
      if (plugin === undefined) return
      const registered: PluginModel = {
        id: model.id,
        upstreams: model.upstreams,
        upstreamModel: model.upstreamModel,
        pricing: model.pricing,
        maxOutputTokens: model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
        ...(model.hostedTools === undefined ? {} : { hostedTools: model.hostedTools })
      }
      const resolved = resolvedOf(plugin, registered)
      entries.set(
        model.id,
        model.batchDiscountPercent === undefined
          ? resolved
          : { ...resolved, batchDiscountPercent: model.batchDiscountPercent }
      )
      catalog.push({ id: model.id, ownedBy: ownedBy(model.id), created, displayName: model.id })
    })
    return { entries, catalog, plugins: byId, endpoints }
  })

/** Lookups over the entries: `lookup` sees chat models only; `resolve` any model with its kind. */
export const makeLookups = (entries: ReadonlyMap<string, ResolvedModel>) => ({
  lookup: (id: string): RegisteredModel | undefined => {
    const entry = entries.get(id)
    return entry?.kind === "chat" ? { plugin: entry.plugin, model: entry.model } : undefined
  },
  resolve: (id: string): ResolvedModel | undefined => entries.get(id)
})
