/**
 * undici, imported with the first upstream call or guarded fetch instead of at start. Its module graph (fetch,
 * websockets, the cache, the mock agent…) costs ~100 ms of CPU to load, which the gateway would otherwise spend before
 * it answers `/readyz` (bench/README.md, "Start-up (sixth session)"). Once loaded it is a plain value: the request
 * path reads it without a step.
 */
import { Effect } from "effect"

export type Undici = typeof import("undici")

let loaded: Undici | undefined
let loading: Promise<Undici> | undefined

/** undici once it has been loaded, else undefined. */
export const undiciNow = (): Undici | undefined => loaded

/** undici, loading it the first time. */
export const loadUndici: Effect.Effect<Undici> = Effect.suspend(() =>
  loaded !== undefined
    ? Effect.succeed(loaded)
    : Effect.promise(() => {
        loading ??= import("undici").then((module) => {
          loaded = module
          return module
        })
        return loading
      })
)
