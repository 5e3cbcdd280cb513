/**
 * Which batch lines go to a vendor's batch API (VendorLines.ts), decided here only: the chat lines of a `text` model
 * served by an upstream the operator marked `batch: true` (OpenAI's Batch API or Anthropic's Message Batches), and the
 * `/v1/embeddings` lines of an `embeddings` model served by such an upstream of protocol `openai` (OpenAI's Batch API
 * takes embeddings; Anthropic's has none, and Gemini upstreams have no batch API here). Every other line is
 * gateway-run.
 */
import type { LineEndpoint } from "../../domain/batch/BatchInput.ts"
import type { ModelConfig, UpstreamConfig } from "../OperatorConfig.ts"

export interface VendorTarget {
  readonly upstream: UpstreamConfig
  readonly upstreamModel: string
}

/** Whether `upstream` takes a line of `endpoint` of a model of `plugin` into its vendor's batch API. */
const takes = (plugin: string, endpoint: LineEndpoint) => (upstream: UpstreamConfig) => {
  if (upstream.batch !== true) return false
  if (endpoint === "/v1/embeddings") return plugin === "embeddings" && upstream.protocol === "openai"
  return plugin === "text"
}

/**
 * The first deployment, in the routing's order of preference, whose upstream takes the model's lines of `endpoint`
 * into its batch API.
 */
export const vendorTargetOf = (
  models: ReadonlyArray<ModelConfig>,
  endpoint: LineEndpoint,
  modelId: unknown
): VendorTarget | undefined => {
  const model = models.find((candidate) => candidate.id === modelId)
  if (model === undefined) return undefined
  const deployments =
    model.deployments === undefined
      ? model.upstreams.map((upstream) => ({ upstream, upstreamModel: model.upstreamModel }))
      : [...model.deployments].sort((a, b) => a.priority - b.priority)
  const accepts = takes(model.plugin, endpoint)
  const found = deployments.find((deployment) => accepts(deployment.upstream))
  return found === undefined ? undefined : { upstream: found.upstream, upstreamModel: found.upstreamModel }
}
