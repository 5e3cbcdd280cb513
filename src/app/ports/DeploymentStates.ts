/**
 * Where deployments' health and upstreams' disabled flags are kept: in this process by default, in Redis when
 * `REDIS_URL` is set so that every instance routes around the same cooldowns, open circuits and disabled
 * upstreams. Reads and writes never fail: a store that cannot be reached leaves routing to what the instance knows
 * (its own copy of every write, which the adapter keeps and logs falling back to), since a routing store's outage
 * must not take the gateway down with it.
 */
import { Context, type Effect } from "effect"
import type { Health } from "../../domain/routing/DeploymentHealth.ts"

/** Why an upstream takes no traffic until an operator enables it again. */
export interface UpstreamDisabled {
  /** `auth`: the vendor refused the gateway's credentials (401/403); `operator`: disabled through the admin API. */
  readonly reason: "auth" | "operator"
  /** Epoch ms. */
  readonly at: number
  /** What happened, for the console and the log; never a key or a vendor body. */
  readonly message: string
}

/** How far a write reached: every instance (`shared`), or only this one (`local`). */
export type StateReach = "shared" | "local"

export interface DeploymentSnapshot {
  readonly health: ReadonlyMap<string, Health>
  /** By upstream name. */
  readonly disabled: ReadonlyMap<string, UpstreamDisabled>
}

export class DeploymentStates extends Context.Service<
  DeploymentStates,
  {
    /** The health of each of `ids` that is not plainly healthy (absent: healthy), and every disabled upstream. */
    readonly read: (ids: ReadonlyArray<string>) => Effect.Effect<DeploymentSnapshot>
    /** Keeps `health` for `id`; `ttlMs` bounds how long it means anything (a healthy deployment needs no entry). */
    readonly write: (id: string, health: Health, ttlMs: number) => Effect.Effect<void>
    /**
     * Disables `upstream`, or enables it again with `undefined`, at least on this instance: `"shared"` when every
     * instance sees it, `"local"` when the shared store could not be written and only this instance does.
     */
    readonly setDisabled: (upstream: string, disabled: UpstreamDisabled | undefined) => Effect.Effect<StateReach>
  }
>()("tollgate/app/ports/DeploymentStates") {}
