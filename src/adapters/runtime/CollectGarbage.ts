/**
 * A full garbage collection on demand, for the two moments V8 does not see as worth one: once the embedded database
 * has been created (below), and when the gateway goes quiet after work (IdleCollection.ts).
 *
 * After creating the database: PGlite creates a database with a second WebAssembly instance (its initdb) and an
 * in-memory archive of the new data directory; both are garbage once the database is open, but the JavaScript heap is
 * small, so V8 sees no reason to collect them and the process keeps ~300 MB it does not use (measured on a first
 * start: 798 MB idle without this, 489 MB with it; bench/README.md, "Start-up and memory"). That one runs only on the
 * start that created the database.
 */
import { Effect } from "effect"
import * as v8 from "node:v8"
import { runInNewContext } from "node:vm"

// Edge: V8's collector is reachable only as the `gc` global that `--expose-gc` defines; setting the flag now defines
// it in a new context. Where that is not possible (Deno), `collect` is undefined and nothing happens.
const collector = (): (() => void) | undefined => {
  const own = (globalThis as { gc?: () => void }).gc
  if (typeof own === "function") return own
  v8.setFlagsFromString?.("--expose-gc")
  return runInNewContext("typeof gc === 'function' ? gc : undefined") as (() => void) | undefined
}

let found: { readonly collect: (() => void) | undefined } | undefined

/** One full collection now, in plain code (nothing where the collector cannot be reached). */
export const collectNow = (): void => {
  found ??= { collect: collector() }
  found.collect?.()
}

export const collectGarbage: Effect.Effect<void> = Effect.sync(collectNow)
