/** A routed attempt's admission under its deployment's and its upstream's own `rpm`, `tpm` and concurrency limits. */
import { Effect } from "effect"
import type { UpstreamLimits } from "../config/decodeDeployments.ts"
import type { Admission, RateLimiter } from "../RateLimiter.ts"
import type { Deployment, RouteHint } from "./Deployments.ts"

/**
 * A batch line's own slots: its share of each capacity that has a `maxConcurrency` (at least one slot), counted apart
 * from the capacity's own slots, which the line takes as well.
 */
const batchShares = (hint: RouteHint, capacities: ReadonlyArray<readonly [string, number | null]>) =>
  hint.batchSharePercent === undefined
    ? []
    : capacities.flatMap(([key, capacity]) =>
        capacity === null
          ? []
          : [
              {
                key: `batch:${key}`,
                limits: {
                  rpm: null,
                  tpm: null,
                  concurrency: Math.max(1, Math.floor((capacity * (hint.batchSharePercent as number)) / 100))
                }
              }
            ]
      )

/**
 * Admits an attempt under the deployment's and its upstream's own limits (their slots, released together), or says
 * when to retry once one of them is reached.
 */
export const admit = (
  limiter: RateLimiter["Service"],
  upstreamLimits: ReadonlyMap<string, UpstreamLimits>,
  deployment: Deployment,
  hint: RouteHint
) =>
  Effect.gen(function* () {
    const { rpm, tpm, maxConcurrency } = deployment.config
    const shared = upstreamLimits.get(deployment.config.upstream.name)
    const slots: Array<Admission> = []
    const upstream = deployment.config.upstream.name
    const limited = [
      ...batchShares(hint, [
        [`deployment:${deployment.model}/${deployment.id}`, maxConcurrency],
        [`upstream:${upstream}`, shared?.maxConcurrency ?? null]
      ]),
      rpm !== null || tpm !== null || maxConcurrency !== null
        ? {
            key: `deployment:${deployment.model}/${deployment.id}`,
            limits: { rpm, tpm, concurrency: maxConcurrency }
          }
        : undefined,
      shared !== undefined && (shared.rpm !== null || shared.tpm !== null || shared.maxConcurrency !== null)
        ? {
            key: `upstream:${upstream}`,
            limits: { rpm: shared.rpm, tpm: shared.tpm, concurrency: shared.maxConcurrency }
          }
        : undefined
    ]
    for (const entry of limited) {
      if (entry === undefined) continue
      const admitted = yield* Effect.result(limiter.admit(entry.key, entry.limits, { defaults: false }))
      if (admitted._tag === "Failure") {
        for (const slot of slots) yield* slot.release
        return { refused: admitted.failure.retryAfterSeconds } as const
      }
      slots.push(admitted.success)
      if (entry.limits.tpm !== null && hint.tokens !== undefined) yield* limiter.recordTokens(entry.key, hint.tokens)
    }
    return { release: Effect.forEach(slots, (slot) => slot.release, { discard: true }) } as const
  })
