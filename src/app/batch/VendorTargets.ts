/**
 * Which batch lines go to a vendor's batch API (VendorLines.ts): those of a `text` model served by an upstream the
 * operator marked `batch: true`. Decided here only.
 */
import type { ModelConfig, UpstreamConfig } from "../OperatorConfig.ts"

export interface VendorTarget {
  readonly upstream: UpstreamConfig
  readonly upstreamModel: string
}

/** The first deployment of a text model whose upstream is batch-capable, in the routing's order of preference. */
export const vendorTargetOf = (models: ReadonlyArray<ModelConfig>, modelId: unknown): VendorTarget | undefined => {
  const model = models.find((candidate) => candidate.id === modelId)
  if (model === undefined || model.plugin !== "text") return undefined
  const deployments =
    model.deployments === undefined
      ? model.upstreams.map((upstream) => ({ upstream, upstreamModel: model.upstreamModel }))
      : [...model.deployments].sort((a, b) => a.priority - b.priority)
  const found = deployments.find((deployment) => deployment.upstream.batch === true)
  return found === undefined ? undefined : { upstream: found.upstream, upstreamModel: found.upstreamModel }
}
