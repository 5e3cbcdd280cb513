import { Redacted, Result } from "effect"
import type { ModelConfig, OperatorConfigData, UpstreamConfig } from "./OperatorConfigData.ts"
import { expandEnv, Unresolved } from "./expandEnv.ts"
import {
  isPriceName,
  makeModelPricing,
  type ModelPricing,
  type PluginPriceKeys,
  parsePrice,
  pricingIssues
} from "./ModelPricing.ts"
import { baseUrlProblem, isUpstreamProtocol, UpstreamProtocols } from "./UpstreamProtocol.ts"

/** Defaults an operator may leave out. */
export const OperatorConfigDefaults = {
  upstreamTimeoutMs: 600_000,
  upstreamIdleTimeoutMs: 300_000,
  upstreamMaxConnections: 128,
  holdTtlSeconds: 900,
  videoPollIntervalMs: 5_000,
  videoDeadlineMinutes: 30,
  videoRetentionDays: 7,
  responsesRetentionDays: 30
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
    "rateLimits"
  ])
  if (root === undefined) return Result.fail(issues)

  const upstreams = decodeUpstreams(input, root.upstreams)
  const models = decodeModels(input, root.models, upstreams, options.priceKeys ?? new Map())
  const plugins = input.list(root.plugins, "plugins", false)?.flatMap((item, index) => {
    const specifier = input.string(item, `plugins[${index}]`)
    return specifier === undefined ? [] : [isRelative(specifier) ? options.resolvePlugin(specifier) : specifier]
  })
  const ledger = input.object(root.ledger, "ledger", ["holdTtlSeconds"], false) ?? {}
  const video = input.object(root.video, "video", ["pollIntervalMs", "deadlineMinutes", "retentionDays"], false) ?? {}
  const responses = input.object(root.responses, "responses", ["retentionDays"], false) ?? {}
  const rateLimits = input.object(root.rateLimits, "rateLimits", ["rpm", "tpm", "concurrency"], false) ?? {}
  // A default limit is optional: absent (or null) means none of that kind for keys without their own.
  const limit = (name: "rpm" | "tpm" | "concurrency"): number | null =>
    rateLimits[name] === undefined || rateLimits[name] === null
      ? null
      : input.positiveInt(rateLimits[name], `rateLimits.${name}`, 0)
  const config: OperatorConfigData = {
    upstreams,
    models,
    plugins: plugins ?? [],
    ledger: {
      holdTtlSeconds: input.positiveInt(
        ledger.holdTtlSeconds,
        "ledger.holdTtlSeconds",
        OperatorConfigDefaults.holdTtlSeconds
      )
    },
    rateLimits: { rpm: limit("rpm"), tpm: limit("tpm"), concurrency: limit("concurrency") },
    video: {
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
    },
    responses: {
      retentionDays: input.positiveInt(
        responses.retentionDays,
        "responses.retentionDays",
        OperatorConfigDefaults.responsesRetentionDays
      )
    }
  }
  return issues.length === 0 ? Result.succeed(config) : Result.fail(issues)
}

const decodeUpstreams = (input: Input, raw: unknown): ReadonlyMap<string, UpstreamConfig> => {
  const upstreams = new Map<string, UpstreamConfig>()
  const entries = input.object(raw, "upstreams", undefined)
  if (entries === undefined) return upstreams
  if (Object.keys(entries).length === 0) input.issue("upstreams", "expected at least one upstream")
  for (const [name, value] of Object.entries(entries)) {
    const path = `upstreams.${name}`
    const fields = input.object(value, path, [
      "protocol",
      "baseUrl",
      "apiKey",
      "timeoutMs",
      "idleTimeoutMs",
      "maxConnections"
    ])
    if (fields === undefined) continue
    const protocol = fields.protocol
    if (protocol === undefined) input.issue(`${path}.protocol`, "required")
    else if (!isUpstreamProtocol(protocol)) {
      if (protocol !== Unresolved) input.issue(`${path}.protocol`, `expected one of ${UpstreamProtocols.join(", ")}`)
    }
    const baseUrl = input.string(fields.baseUrl, `${path}.baseUrl`)
    if (baseUrl !== undefined && isUpstreamProtocol(protocol)) {
      const problem = baseUrlProblem(protocol, baseUrl)
      if (problem !== undefined) input.issue(`${path}.baseUrl`, problem)
    }
    const apiKey = input.string(fields.apiKey, `${path}.apiKey`)
    const upstream: UpstreamConfig = {
      name,
      protocol: isUpstreamProtocol(protocol) ? protocol : "openai",
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
    upstreams.set(name, upstream)
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
      "upstreamModel",
      "pricing",
      "maxOutputTokens"
    ])
    if (fields === undefined) return
    const id = input.string(fields.id, `${path}.id`)
    if (id !== undefined) {
      const first = firstPathOfId.get(id)
      if (first === undefined) firstPathOfId.set(id, `${path}.id`)
      else input.issue(`${path}.id`, `duplicate model id (first defined at ${first})`)
    }
    const plugin = input.string(fields.plugin, `${path}.plugin`)
    const routes = decodeRoutes(input, fields.upstreams, `${path}.upstreams`, upstreams)
    const upstreamModel =
      fields.upstreamModel === undefined ? id : input.string(fields.upstreamModel, `${path}.upstreamModel`)
    const pricing = decodePricing(input, fields.pricing, `${path}.pricing`)
    const keys = plugin === undefined ? undefined : priceKeys.get(plugin)
    if (plugin !== undefined && keys !== undefined && typeof fields.pricing === "object" && fields.pricing !== null) {
      for (const issue of pricingIssues(`${path}.pricing`, plugin, Object.keys(fields.pricing), keys)) input.push(issue)
    }
    const maxOutputTokens =
      fields.maxOutputTokens === undefined
        ? undefined
        : input.positiveInt(fields.maxOutputTokens, `${path}.maxOutputTokens`, 0)
    if (id === undefined || plugin === undefined || upstreamModel === undefined || pricing === undefined) return
    models.push({ id, plugin, upstreams: routes, upstreamModel, pricing, maxOutputTokens })
  })
  return models
}

const decodeRoutes = (
  input: Input,
  raw: unknown,
  path: string,
  upstreams: ReadonlyMap<string, UpstreamConfig>
): ReadonlyArray<UpstreamConfig> => {
  const names = input.list(raw, path, true)
  if (names === undefined) return []
  if (names.length === 0) input.issue(path, "expected at least one upstream name")
  const defined = [...upstreams.keys()].join(", ") || "none"
  return names.flatMap((item, index) => {
    const name = input.string(item, `${path}[${index}]`)
    if (name === undefined) return []
    const upstream = upstreams.get(name)
    if (upstream === undefined) input.issue(`${path}[${index}]`, `no such upstream (defined: ${defined})`)
    return upstream === undefined ? [] : [upstream]
  })
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

/** Reads loosely typed values, recording a path-named issue for each that does not fit. */
class Input {
  constructor(private readonly issues: Array<string>) {}

  issue(path: string, message: string): void {
    this.issues.push(`${path}: ${message}`)
  }

  push(issue: string): void {
    this.issues.push(issue)
  }

  /** An object; with `keys`, any other key is reported. Absent is an issue only when `required`. */
  object(
    value: unknown,
    path: string,
    keys: ReadonlyArray<string> | undefined,
    required = true
  ): Record<string, unknown> | undefined {
    if (value === undefined || value === null) {
      if (required) this.issue(path, "required")
      return undefined
    }
    if (value === Unresolved) return undefined
    if (typeof value !== "object" || Array.isArray(value)) {
      this.issue(path, "expected an object")
      return undefined
    }
    const record = value as Record<string, unknown>
    if (keys !== undefined) {
      for (const key of Object.keys(record)) {
        if (!keys.includes(key)) this.issue(path === "config" ? key : `${path}.${key}`, "unknown key")
      }
    }
    return record
  }

  list(value: unknown, path: string, required: boolean): ReadonlyArray<unknown> | undefined {
    if (value === undefined || value === null) {
      if (required) this.issue(path, "required")
      return undefined
    }
    if (!Array.isArray(value)) {
      this.issue(path, "expected a list")
      return undefined
    }
    return value
  }

  /** A non-empty string. */
  string(value: unknown, path: string): string | undefined {
    if (value === Unresolved) return undefined
    if (value === undefined || value === null) {
      this.issue(path, "required")
      return undefined
    }
    if (typeof value !== "string" || value.trim() === "") {
      this.issue(path, "expected a non-empty string")
      return undefined
    }
    return value
  }

  /** A positive integer, written as a number or, after `${VAR}` expansion, as digits; `fallback` when absent. */
  positiveInt(value: unknown, path: string, fallback: number): number {
    if (value === undefined || value === null || value === Unresolved) return fallback
    const number = typeof value === "string" && /^[0-9]+$/.test(value) ? Number(value) : value
    if (typeof number !== "number" || !Number.isSafeInteger(number) || number <= 0) {
      this.issue(path, "expected a positive integer")
      return fallback
    }
    return number
  }
}
