/**
 * The routing parts of the operator config: where each model is served (`models[].upstreams` or
 * `models[].deployments`), each upstream's own rate limits, and `routing:`. A bare upstream name is a deployment of
 * weight 1 whose priority is its place in the list, so `upstreams: [a, b]` still means "a, and b when a cannot".
 */
import { Unresolved } from "./expandEnv.ts"
import type { Input } from "./ConfigInput.ts"
import type { DeploymentConfig, RoutingConfig, UpstreamConfig } from "./OperatorConfigData.ts"

export const RoutingDefaults: RoutingConfig = {
  maxAttempts: 3,
  retryBudgetMs: 30_000,
  failureThreshold: 5,
  circuitOpenSeconds: 30,
  cooldownSeconds: 1,
  maxCooldownSeconds: 300
}

/** An upstream's own limits, shared by every model it serves (null: none of that kind). */
export interface UpstreamLimits {
  readonly rpm: number | null
  readonly tpm: number | null
  readonly maxConcurrency: number | null
}

const DEPLOYMENT_KEYS = ["upstream", "upstreamModel", "weight", "priority", "maxConcurrency", "rpm", "tpm"]

const optionalPositiveInt = (input: Input, value: unknown, path: string): number | null =>
  value === undefined || value === null ? null : input.positiveInt(value, path, 0) || null

const number = (value: unknown): unknown => (typeof value === "string" && value.trim() !== "" ? Number(value) : value)

/** A positive number (weights may be fractional), `fallback` when absent. */
const weightOf = (input: Input, value: unknown, path: string): number => {
  if (value === undefined || value === null || value === Unresolved) return 1
  const parsed = number(value)
  if (typeof parsed !== "number" || !Number.isFinite(parsed) || parsed <= 0 || parsed > 1_000_000) {
    input.issue(path, "expected a positive number (at most 1000000)")
    return 1
  }
  return parsed
}

const priorityOf = (input: Input, value: unknown, path: string, fallback: number): number => {
  if (value === undefined || value === null || value === Unresolved) return fallback
  const parsed = number(value)
  if (typeof parsed !== "number" || !Number.isSafeInteger(parsed) || parsed < 0) {
    input.issue(path, "expected an integer of 0 or more (lower is preferred)")
    return fallback
  }
  return parsed
}

/**
 * A model's deployments and the distinct upstreams they use. `fields` is the model's entry; exactly one of its
 * `upstreams` and `deployments` lists where it is served.
 */
export const decodeDeployments = (
  input: Input,
  fields: Record<string, unknown>,
  path: string,
  upstreams: ReadonlyMap<string, UpstreamConfig>,
  modelUpstreamModel: string | undefined
): { readonly upstreams: ReadonlyArray<UpstreamConfig>; readonly deployments: ReadonlyArray<DeploymentConfig> } => {
  if (fields.upstreams !== undefined && fields.deployments !== undefined) {
    input.issue(`${path}.deployments`, "give either upstreams or deployments, not both")
  }
  const listed = fields.deployments !== undefined
  const listPath = `${path}.${listed ? "deployments" : "upstreams"}`
  const items = input.list(listed ? fields.deployments : fields.upstreams, listPath, true)
  if (items === undefined) return { upstreams: [], deployments: [] }
  if (items.length === 0) input.issue(listPath, `expected at least one ${listed ? "deployment" : "upstream name"}`)
  const defined = [...upstreams.keys()].join(", ") || "none"
  const deployments: Array<DeploymentConfig> = []
  items.forEach((item, index) => {
    const itemPath = `${listPath}[${index}]`
    // In `upstreams:` the list is the fallback order; in `deployments:` everything shares tier 0 unless it says.
    const defaultPriority = listed ? 0 : index
    const entry =
      typeof item === "string" || item === Unresolved
        ? { upstream: item }
        : input.object(item, itemPath, DEPLOYMENT_KEYS)
    if (entry === undefined) return
    const name = input.string(entry.upstream, typeof item === "string" ? itemPath : `${itemPath}.upstream`)
    const upstream = name === undefined ? undefined : upstreams.get(name)
    if (name !== undefined && upstream === undefined) {
      input.issue(
        typeof item === "string" ? itemPath : `${itemPath}.upstream`,
        `no such upstream (defined: ${defined})`
      )
    }
    const upstreamModel =
      entry.upstreamModel === undefined
        ? modelUpstreamModel
        : input.string(entry.upstreamModel, `${itemPath}.upstreamModel`)
    const deployment = {
      weight: weightOf(input, entry.weight, `${itemPath}.weight`),
      priority: priorityOf(input, entry.priority, `${itemPath}.priority`, defaultPriority),
      maxConcurrency: optionalPositiveInt(input, entry.maxConcurrency, `${itemPath}.maxConcurrency`),
      rpm: optionalPositiveInt(input, entry.rpm, `${itemPath}.rpm`),
      tpm: optionalPositiveInt(input, entry.tpm, `${itemPath}.tpm`)
    }
    if (upstream === undefined || upstreamModel === undefined) return
    if (deployments.some((other) => other.upstream.name === upstream.name && other.upstreamModel === upstreamModel)) {
      input.issue(itemPath, "this upstream and upstreamModel are already a deployment of this model")
      return
    }
    deployments.push({ upstream, upstreamModel, ...deployment })
  })
  const distinct = [
    ...new Map(deployments.map((deployment) => [deployment.upstream.name, deployment.upstream])).values()
  ]
  return { upstreams: distinct, deployments }
}

/** The `rpm`, `tpm` and `maxConcurrency` of one `upstreams.<name>` entry. */
export const decodeUpstreamLimits = (input: Input, fields: Record<string, unknown>, path: string): UpstreamLimits => ({
  rpm: optionalPositiveInt(input, fields.rpm, `${path}.rpm`),
  tpm: optionalPositiveInt(input, fields.tpm, `${path}.tpm`),
  maxConcurrency: optionalPositiveInt(input, fields.maxConcurrency, `${path}.maxConcurrency`)
})

export const decodeRouting = (input: Input, raw: unknown): RoutingConfig => {
  const fields = input.object(raw, "routing", Object.keys(RoutingDefaults), false) ?? {}
  const read = (key: keyof RoutingConfig) => input.positiveInt(fields[key], `routing.${key}`, RoutingDefaults[key])
  return {
    maxAttempts: read("maxAttempts"),
    retryBudgetMs: read("retryBudgetMs"),
    failureThreshold: read("failureThreshold"),
    circuitOpenSeconds: read("circuitOpenSeconds"),
    cooldownSeconds: read("cooldownSeconds"),
    maxCooldownSeconds: read("maxCooldownSeconds")
  }
}
