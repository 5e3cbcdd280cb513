import { Redacted, Result } from "effect"
import type { ModelConfig, OperatorConfigData, UpstreamConfig } from "./OperatorConfigData.ts"
import { expandEnv, Unresolved } from "./expandEnv.ts"
import { Input } from "./ConfigInput.ts"
import { decodeAlerts } from "./decodeAlerts.ts"
import { decodeBatches } from "./decodeBatches.ts"
import { decodeDeployments, decodeRouting, decodeUpstreamLimits, type UpstreamLimits } from "./decodeDeployments.ts"
import {
  isPriceName,
  makeModelPricing,
  type ModelPricing,
  type PluginPriceKeys,
  parsePrice,
  pricingIssues
} from "./ModelPricing.ts"
import { baseUrlProblem, isPluginProtocolName, isUpstreamProtocol, UpstreamProtocols } from "./UpstreamProtocol.ts"
import type { UpstreamAuth } from "@tollgate/plugin-spec"

/** Defaults an operator may leave out. */
export const OperatorConfigDefaults = {
  upstreamTimeoutMs: 600_000,
  upstreamIdleTimeoutMs: 300_000,
  upstreamMaxConnections: 128,
  holdTtlSeconds: 900,
  videoPollIntervalMs: 5_000,
  videoDeadlineMinutes: 30,
  videoRetentionDays: 7,
  responsesRetentionDays: 30,
  // OpenAI's own default for batch files (its `FileExpirationAfter`: files of purpose `batch` expire after 30 days).
  filesRetentionDays: 30
} as const

export interface DecodeOptions {
  /** Variables for `${VAR}` expansion. */
  readonly env: ReadonlyMap<string, string>
  /** Turns a relative plugin specifier ("./x.ts") into an absolute one; relative to the config file's folder. */
  readonly resolvePlugin: (specifier: string) => string
  /**
   * The price keys of plugins known before any module is loaded (the built-in families), so their models' prices are
   * checked with every other problem of the file; loaded plugins' keys are checked once they load.
   */
  readonly priceKeys?: ReadonlyMap<string, PluginPriceKeys> | undefined
}

/**
 * Validates a parsed config file. Every problem is reported, each as `path: message`, and no message carries a value
 * read from the file or the environment, so a misplaced secret cannot leak through an error.
 */
export const decodeOperatorConfig = (
  raw: unknown,
  options: DecodeOptions
): Result.Result<OperatorConfigData, ReadonlyArray<string>> => {
  if (raw === undefined || raw === null) return Result.fail(["config: expected an object, the file is empty"])
  const expanded = expandEnv(raw, options.env)
  const issues: Array<string> = [...expanded.issues]
  const input = new Input(issues)
  const root = input.object(expanded.value, "config", [
    "upstreams",
    "models",
    "plugins",
    "ledger",
    "video",
    "responses",
    "files",
    "batches",
    "rateLimits",
    "routing",
    "alerts"
  ])
  if (root === undefined) return Result.fail(issues)

  const upstreamLimits = new Map<string, UpstreamLimits>()
  const upstreams = decodeUpstreams(input, root.upstreams, upstreamLimits)
  const models = decodeModels(input, root.models, upstreams, options.priceKeys ?? new Map())
  const config: OperatorConfigData = {
    upstreams,
    upstreamLimits,
    models,
    routing: decodeRouting(input, root.routing),
    alerts: decodeAlerts(input, root.alerts),
    plugins: decodePlugins(input, root.plugins, options),
    ...decodeOneNumberSections(input, root),
    rateLimits: decodeDefaultLimits(input, root.rateLimits),
    video: decodeVideo(input, root.video),
    batches: decodeBatches(input, root.batches)
  }
  return issues.length === 0 ? Result.succeed(config) : Result.fail(issues)
}

/** `plugins:`, module specifiers; a relative one is resolved against the config file's folder. */
const decodePlugins = (input: Input, raw: unknown, options: DecodeOptions): ReadonlyArray<string> =>
  input.list(raw, "plugins", false)?.flatMap((item, index) => {
    const specifier = input.string(item, `plugins[${index}]`)
    return specifier === undefined ? [] : [isRelative(specifier) ? options.resolvePlugin(specifier) : specifier]
  }) ?? []

/** `rateLimits:`, the limits of keys without their own: absent (or null) means none of that kind. */
const decodeDefaultLimits = (input: Input, raw: unknown): OperatorConfigData["rateLimits"] => {
  const rateLimits = input.object(raw, "rateLimits", ["rpm", "tpm", "concurrency"], false) ?? {}
  const limit = (name: "rpm" | "tpm" | "concurrency"): number | null =>
    rateLimits[name] === undefined || rateLimits[name] === null
      ? null
      : input.positiveInt(rateLimits[name], `rateLimits.${name}`, 0)
  return { rpm: limit("rpm"), tpm: limit("tpm"), concurrency: limit("concurrency") }
}

const decodeVideo = (input: Input, raw: unknown): OperatorConfigData["video"] => {
  const video = input.object(raw, "video", ["pollIntervalMs", "deadlineMinutes", "retentionDays"], false) ?? {}
  return {
    pollIntervalMs: input.positiveInt(
      video.pollIntervalMs,
      "video.pollIntervalMs",
      OperatorConfigDefaults.videoPollIntervalMs
    ),
    deadlineMinutes: input.positiveInt(
      video.deadlineMinutes,
      "video.deadlineMinutes",
      OperatorConfigDefaults.videoDeadlineMinutes
    ),
    retentionDays: input.positiveInt(
      video.retentionDays,
      "video.retentionDays",
      OperatorConfigDefaults.videoRetentionDays
    )
  }
}

/** Sections of one positive whole number: `ledger: { holdTtlSeconds }`, `responses:`/`files:` `{ retentionDays }`. */
const decodeOneNumberSections = (input: Input, root: Readonly<Record<string, unknown>>) => {
  const one = (section: string, field: string, fallback: number) => {
    const fields = input.object(root[section], section, [field], false) ?? {}
    return input.positiveInt(fields[field], `${section}.${field}`, fallback)
  }
  return {
    ledger: { holdTtlSeconds: one("ledger", "holdTtlSeconds", OperatorConfigDefaults.holdTtlSeconds) },
    responses: { retentionDays: one("responses", "retentionDays", OperatorConfigDefaults.responsesRetentionDays) },
    files: { retentionDays: one("files", "retentionDays", OperatorConfigDefaults.filesRetentionDays) }
  }
}

/** `auth: bearer`, `auth: { header: x-acme-key }` or `auth: { query: key }`: how the upstream's key is sent. */
const decodeAuth = (input: Input, raw: unknown, path: string): { readonly auth?: UpstreamAuth } => {
  if (raw === undefined) return {}
  if (raw === "bearer") return { auth: { scheme: "bearer" } }
  const fields = typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {}
  const [scheme, ...others] = Object.keys(fields)
  const name = scheme === undefined ? undefined : fields[scheme]
  if ((scheme === "header" || scheme === "query") && others.length === 0 && typeof name === "string") {
    if (/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) return { auth: { scheme, name } }
  }
  input.issue(path, 'expected "bearer", { header: <header name> } or { query: <parameter name> }')
  return {}
}

/**
 * `batch: true` marks an upstream whose vendor batch API takes the batch lines of its models (app/batch/VendorTargets.ts):
 * only OpenAI's and Anthropic's protocols have one.
 */
const decodeBatchCapable = (input: Input, raw: unknown, path: string, protocol: string): { batch?: true } => {
  if (raw === undefined || raw === false) return {}
  if (raw !== true) {
    input.issue(`${path}.batch`, "expected true or false")
    return {}
  }
  if (protocol !== "openai" && protocol !== "anthropic") {
    input.issue(`${path}.batch`, "only an upstream of protocol openai or anthropic has a batch API")
    return {}
  }
  return { batch: true }
}

/** One entry of `upstreams:`; its own limits go to `limits`. Undefined when it is not an object at all. */
const decodeUpstream = (
  input: Input,
  name: string,
  value: unknown,
  limits: Map<string, UpstreamLimits>
): UpstreamConfig | undefined => {
  const path = `upstreams.${name}`
  const fields = input.object(value, path, [
    "protocol",
    "baseUrl",
    "apiKey",
    "timeoutMs",
    "idleTimeoutMs",
    "maxConnections",
    "auth",
    "rpm",
    "tpm",
    "maxConcurrency",
    "batch"
  ])
  if (fields === undefined) return undefined
  limits.set(name, decodeUpstreamLimits(input, fields, path))
  const protocol = fields.protocol
  if (protocol === undefined) input.issue(`${path}.protocol`, "required")
  else if (!isUpstreamProtocol(protocol) && !isPluginProtocolName(protocol)) {
    if (protocol !== Unresolved) {
      input.issue(
        `${path}.protocol`,
        `expected one of ${UpstreamProtocols.join(", ")}, or a plugin's own protocol name (lowercase letters, digits, dashes)`
      )
    }
  }
  const baseUrl = input.string(fields.baseUrl, `${path}.baseUrl`)
  if (baseUrl !== undefined && (isUpstreamProtocol(protocol) || isPluginProtocolName(protocol))) {
    const problem = baseUrlProblem(protocol, baseUrl)
    if (problem !== undefined) input.issue(`${path}.baseUrl`, problem)
  }
  const apiKey = input.string(fields.apiKey, `${path}.apiKey`)
  const upstream: UpstreamConfig = {
    name,
    protocol: isUpstreamProtocol(protocol) || isPluginProtocolName(protocol) ? protocol : "openai",
    ...decodeAuth(input, fields.auth, `${path}.auth`),
    baseUrl: (baseUrl ?? "").replace(/\/+$/, ""),
    apiKey: Redacted.make(apiKey ?? "", { label: `${path}.apiKey` }),
    timeoutMs: input.positiveInt(fields.timeoutMs, `${path}.timeoutMs`, OperatorConfigDefaults.upstreamTimeoutMs),
    idleTimeoutMs: input.positiveInt(
      fields.idleTimeoutMs,
      `${path}.idleTimeoutMs`,
      OperatorConfigDefaults.upstreamIdleTimeoutMs
    ),
    maxConnections: input.positiveInt(
      fields.maxConnections,
      `${path}.maxConnections`,
      OperatorConfigDefaults.upstreamMaxConnections
    )
  }
  return { ...upstream, ...decodeBatchCapable(input, fields.batch, path, upstream.protocol) }
}

const decodeUpstreams = (
  input: Input,
  raw: unknown,
  limits: Map<string, UpstreamLimits>
): ReadonlyMap<string, UpstreamConfig> => {
  const upstreams = new Map<string, UpstreamConfig>()
  const entries = input.object(raw, "upstreams", undefined)
  if (entries === undefined) return upstreams
  if (Object.keys(entries).length === 0) input.issue("upstreams", "expected at least one upstream")
  for (const [name, value] of Object.entries(entries)) {
    const upstream = decodeUpstream(input, name, value, limits)
    if (upstream !== undefined) upstreams.set(name, upstream)
  }
  return upstreams
}

const decodeModels = (
  input: Input,
  raw: unknown,
  upstreams: ReadonlyMap<string, UpstreamConfig>,
  priceKeys: ReadonlyMap<string, PluginPriceKeys>
): ReadonlyArray<ModelConfig> => {
  const items = input.list(raw, "models", true)
  if (items === undefined) return []
  const firstPathOfId = new Map<string, string>()
  const models: Array<ModelConfig> = []
  items.forEach((item, index) => {
    const path = `models[${index}]`
    const fields = input.object(item, path, [
      "id",
      "plugin",
      "upstreams",
      "deployments",
      "upstreamModel",
      "pricing",
      "maxOutputTokens",
      "contextWindow",
      "hostedTools",
      "batchDiscountPercent"
    ])
    if (fields === undefined) return
    const id = input.string(fields.id, `${path}.id`)
    if (id !== undefined) {
      const first = firstPathOfId.get(id)
      if (first === undefined) firstPathOfId.set(id, `${path}.id`)
      else input.issue(`${path}.id`, `duplicate model id (first defined at ${first})`)
    }
    const plugin = input.string(fields.plugin, `${path}.plugin`)
    const upstreamModel =
      fields.upstreamModel === undefined ? id : input.string(fields.upstreamModel, `${path}.upstreamModel`)
    const routes = decodeDeployments(input, fields, path, upstreams, upstreamModel)
    const pricing = decodePricing(input, fields.pricing, `${path}.pricing`)
    const keys = plugin === undefined ? undefined : priceKeys.get(plugin)
    if (plugin !== undefined && keys !== undefined && typeof fields.pricing === "object" && fields.pricing !== null) {
      for (const issue of pricingIssues(`${path}.pricing`, plugin, Object.keys(fields.pricing), keys)) input.push(issue)
    }
    const maxOutputTokens =
      fields.maxOutputTokens === undefined
        ? undefined
        : input.positiveInt(fields.maxOutputTokens, `${path}.maxOutputTokens`, 0)
    const contextWindow =
      fields.contextWindow === undefined
        ? undefined
        : input.positiveInt(fields.contextWindow, `${path}.contextWindow`, 0)
    const hostedTools =
      fields.hostedTools === undefined ? undefined : input.string(fields.hostedTools, `${path}.hostedTools`)
    if (hostedTools !== undefined && hostedTools !== "omit" && hostedTools !== "refuse") {
      input.issue(`${path}.hostedTools`, `must be "omit" or "refuse", not "${hostedTools}"`)
    }
    const batchDiscountPercent = percentOff(input, fields.batchDiscountPercent, `${path}.batchDiscountPercent`)
    if (id === undefined || plugin === undefined || upstreamModel === undefined || pricing === undefined) return
    models.push({
      id,
      plugin,
      ...routes,
      upstreamModel,
      pricing,
      maxOutputTokens,
      contextWindow,
      ...(hostedTools === "refuse" || hostedTools === "omit" ? { hostedTools } : {}),
      ...(batchDiscountPercent === undefined ? {} : { batchDiscountPercent })
    })
  })
  return models
}

/** A whole percentage from 0 to 100 (a discount off the interactive prices); undefined when absent or wrong. */
const percentOff = (input: Input, raw: unknown, path: string): number | undefined => {
  if (raw === undefined || raw === null) return undefined
  const value = typeof raw === "string" && /^[0-9]+$/.test(raw) ? Number(raw) : raw
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 100) return value
  input.issue(path, "expected a whole percentage from 0 to 100")
  return undefined
}

const decodePricing = (input: Input, raw: unknown, path: string): ModelPricing | undefined => {
  const fields = input.object(raw, path, undefined)
  if (fields === undefined) return undefined
  const pricing: Record<string, bigint> = {}
  for (const [key, value] of Object.entries(fields)) {
    // Which keys apply is the plugin's to say (checked once plugins are loaded); here only the name's form.
    if (!isPriceName(key)) {
      input.issue(`${path}.${key}`, "not a price name (lowerCamelCase letters and digits)")
      continue
    }
    if (value === Unresolved) continue
    const parsed = parsePrice(value)
    if ("problem" in parsed) input.issue(`${path}.${key}`, parsed.problem)
    else pricing[key] = parsed.micros
  }
  return makeModelPricing(pricing)
}

const isRelative = (specifier: string): boolean => specifier.startsWith("./") || specifier.startsWith("../")
