/**
 * What a plugin loaded from the operator config is handed, and how the gateway reads what it hands back. Such a plugin
 * is a package of its own, with its own copies of its dependencies (its own `effect`), so nothing crosses by identity:
 * - the models it sees carry no credentials (the gateway's HTTP capability adds the key of an upstream by its name),
 *   so no `Redacted` of the gateway's `effect` ever reaches code that would need its own copy to read it;
 * - its failures are recognised by their shape (`_tag: "PluginFailure"`, a known reason) and copied into plain values,
 *   never by class; anything else it fails with becomes `unavailable` (its text kept for logs only);
 * - the client reads the gateway's words: a failure about the vendor (it carries the vendor's status, or its reason
 *   is not about the request) gets the gateway's message for its reason, and what the plugin said goes to `detail`,
 *   logged, never sent. Only the plugin's own refusal of a request (no vendor status) keeps its message;
 * - a method that throws instead of returning an effect is a defect of that call, not of the gateway.
 * The gateway's own plugins are not wrapped: they share its `effect` and read keys through its upstream client.
 */
import type {
  FailureReason,
  ModelPlugin,
  PluginFailure,
  PluginModel,
  TokenCounter,
  UpstreamConfig,
  UpstreamHttp
} from "@tollgate/plugin-spec"
import { FAILURE_REASONS } from "@tollgate/plugin-spec/shape"
import { Effect } from "effect"

type Record_ = Readonly<Record<string, unknown>>

const isRecord = (value: unknown): value is Record_ =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** An upstream as a plugin sees it: the spec's fields only (never the key, nor anything else the config holds). */
export const pluginUpstream = (upstream: UpstreamConfig): UpstreamConfig => ({
  name: upstream.name,
  protocol: upstream.protocol,
  baseUrl: upstream.baseUrl,
  timeoutMs: upstream.timeoutMs,
  idleTimeoutMs: upstream.idleTimeoutMs,
  maxConnections: upstream.maxConnections,
  ...(upstream.auth === undefined ? {} : { auth: upstream.auth })
})

/** A model as a plugin sees it: its upstreams without credentials. */
export const pluginModel = (model: PluginModel): PluginModel => ({
  id: model.id,
  upstreams: model.upstreams.map(pluginUpstream),
  upstreamModel: model.upstreamModel,
  pricing: model.pricing,
  maxOutputTokens: model.maxOutputTokens
})

const isModel = (value: unknown): value is PluginModel =>
  isRecord(value) && typeof value.id === "string" && Array.isArray(value.upstreams)

/**
 * An argument on its way to the plugin: a model, or a call carrying one, with the credentials taken out; a call gets
 * the gateway's HTTP capability, whatever its kind.
 */
const outbound =
  ({ http, tokens }: Capabilities) =>
  (value: unknown): unknown => {
    if (isModel(value)) return pluginModel(value)
    if (isRecord(value) && isModel(value.model)) {
      return {
        ...value,
        model: pluginModel(value.model),
        ...(http === undefined ? {} : { http }),
        ...(tokens === undefined ? {} : { tokens })
      }
    }
    return value
  }

/** What the gateway gives every loaded plugin: its HTTP client and its tokenizer. */
export interface Capabilities {
  readonly http?: UpstreamHttp | undefined
  readonly tokens?: TokenCounter | undefined
}

const optionalString = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)
const optionalNumber = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined

/** Whether a value has the shape of the spec's `PluginFailure` (whatever made it). */
export const isPluginFailureShape = (value: unknown): value is PluginFailure =>
  isRecord(value) &&
  value._tag === "PluginFailure" &&
  typeof value.reason === "string" &&
  (FAILURE_REASONS as ReadonlyArray<string>).includes(value.reason) &&
  typeof value.message === "string"

/** What the client reads for a failure about the vendor, by reason. */
const GATEWAY_WORDS: Readonly<Record<FailureReason, string>> = {
  invalid_request: "the upstream rejected the request",
  rate_limited: "the upstream is rate limiting; retry later",
  overloaded: "the upstream is overloaded; retry later",
  unavailable: "the upstream failed",
  timeout: "the upstream did not answer in time",
  not_found: "the upstream does not know the object asked for",
  cancelled: "the request was cancelled",
  misconfigured: "the gateway cannot serve this model as configured"
}

/** Reasons about the request itself: a plugin refusing one before asking its vendor says why in its own words. */
const OWN_WORDS: ReadonlySet<FailureReason> = new Set(["invalid_request", "not_found"])

/** The message a client reads: the plugin's own refusal as it said it, anything about the vendor in the gateway's words. */
const clientMessage = (failure: PluginFailure): string => {
  const status = failure.upstreamStatus
  if (status === undefined && OWN_WORDS.has(failure.reason)) return failure.message
  const withStatus = status !== undefined && (failure.reason === "invalid_request" || failure.reason === "unavailable")
  return withStatus ? `${GATEWAY_WORDS[failure.reason]} (HTTP ${status})` : GATEWAY_WORDS[failure.reason]
}

/**
 * A plugin's failure as a plain `PluginFailure` of known fields, its message the client's (`clientMessage`; what the
 * plugin said, when replaced, leads `detail`). Anything else a plugin fails with breaks the contract: the client is
 * told the upstream call failed, and what the plugin said goes to `detail` (logs only).
 */
export const inboundFailure = (error: unknown): PluginFailure => {
  if (!isPluginFailureShape(error)) {
    const said = isRecord(error) && typeof error.message === "string" ? error.message : String(error)
    return {
      _tag: "PluginFailure",
      reason: "unavailable",
      message: "the model's plugin failed without saying why",
      code: "plugin_error",
      detail: `the plugin failed with a value that is not a PluginFailure: ${said.slice(0, 500)}`
    }
  }
  const fields = {
    code: optionalString(error.code),
    param: optionalString(error.param),
    retryAfterSeconds: optionalNumber(error.retryAfterSeconds),
    upstreamStatus: optionalNumber(error.upstreamStatus),
    detail: optionalString(error.detail)
  }
  const plain: PluginFailure = {
    _tag: "PluginFailure",
    reason: error.reason,
    message: error.message,
    ...Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))
  }
  const message = clientMessage(plain)
  if (message === plain.message) return plain
  const said = `the plugin said: ${plain.message.slice(0, 500)}`
  return { ...plain, message, detail: plain.detail === undefined ? said : `${said}; ${plain.detail}` }
}

/** A failure whose vendor text was kept from the client goes to the logs (the upstream client already took its key out). */
const logged = (plugin: ModelPlugin) => (failure: PluginFailure) =>
  failure.detail === undefined || failure.reason === "cancelled"
    ? Effect.void
    : Effect.logWarning("a plugin's call failed").pipe(
        Effect.annotateLogs({
          plugin: plugin.id,
          reason: failure.reason,
          ...(failure.upstreamStatus === undefined ? {} : { upstreamStatus: failure.upstreamStatus }),
          detail: failure.detail.slice(0, 2_000)
        })
      )

/** The methods that answer with an effect, per kind (a new kind's is `invoke`). */
const EFFECT_METHODS = ["invoke", "generate", "edit", "create", "poll", "download", "embed", "transcribe", "speak"]
/** Optional pure methods that may be handed a model (a chat plugin's `check`, `notes` and `countInput`). */
const PURE_METHODS = ["check", "notes", "countInput"]

type AnyFunction = (...args: ReadonlyArray<unknown>) => unknown

const methodOf = (owner: object, name: string): AnyFunction | undefined => {
  const value = (owner as Record_)[name]
  return typeof value === "function" ? (value as AnyFunction) : undefined
}

/** A plugin from the operator config, as the gateway calls it (see the module's comment), `http` in every call. */
export const atBoundary = (plugin: ModelPlugin, capabilities: Capabilities = {}): ModelPlugin => {
  const toPlugin = outbound(capabilities)
  const { tokens } = capabilities
  const wrapped: Record<string, unknown> = { ...plugin }
  for (const key of [
    "specificationVersion",
    "id",
    "family",
    "kind",
    "pricingKeys",
    "endpoint",
    "request",
    "defaultModel"
  ]) {
    if (key in plugin) wrapped[key] = (plugin as unknown as Record_)[key]
  }
  for (const name of EFFECT_METHODS) {
    const method = methodOf(plugin, name)
    if (method === undefined) continue
    wrapped[name] = (...args: ReadonlyArray<unknown>) =>
      Effect.suspend(() => method.apply(plugin, args.map(toPlugin)) as Effect.Effect<unknown, unknown>).pipe(
        Effect.mapError(inboundFailure),
        Effect.tapError(logged(plugin))
      )
  }
  for (const name of PURE_METHODS) {
    const method = methodOf(plugin, name)
    if (method !== undefined)
      wrapped[name] = (...args: ReadonlyArray<unknown>) => method.apply(plugin, args.map(toPlugin))
  }
  const estimate = methodOf(plugin.pricing, "estimate")
  const price = methodOf(plugin.pricing, "price")
  wrapped.pricing = {
    estimate: (input: unknown, model: PluginModel) => estimate?.call(plugin.pricing, input, pluginModel(model), tokens),
    price: (usage: unknown, model: PluginModel) => price?.call(plugin.pricing, usage, pluginModel(model), tokens)
  }
  return wrapped as unknown as ModelPlugin
}
