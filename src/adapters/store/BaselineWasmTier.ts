/**
 * An embedded gateway runs its WebAssembly on V8's baseline compiler (Liftoff) only: PGlite's functions are never
 * recompiled by the optimising one (TurboFan). Postgres compiled to WebAssembly runs thousands of functions a few times
 * each; without this V8 recompiled 1,100 of them while the store started and served a short write workload, each
 * recompilation more code and compiler memory. Measured (bench/README.md, "PGlite on the baseline compiler"): an idle
 * embedded gateway restarted on its data dir 241–246 → 190–191 MB and ready in 1.65 s instead of 2.2–2.6 s, a first
 * start 346–373 → 260–266 MB, for about 4 % of the embedded store's throughput.
 *
 * The flag is V8's and the whole process's, and V8 reads it both when a module is compiled and each time a function is
 * hot enough to tier up. So it stays set: turning tier-up back on once PGlite has compiled lets PGlite's hot functions
 * tier up later (checked with a module of our own) and take the memory back. Every module this process compiles
 * afterwards (undici's HTTP parser) runs on Liftoff as well; the measured throughput of the embedded store includes
 * it. A gateway on a Postgres server never calls this. A process started with flags of its own that choose
 * WebAssembly's compilers keeps them: nothing is set then.
 */
import * as v8 from "node:v8"

/** V8's flags that choose WebAssembly's compilers: `--liftoff…`, `--wasm-tier-up`, `--wasm-dynamic-tiering`, … */
const ownWasmFlags = (): boolean =>
  [...process.execArgv, process.env.NODE_OPTIONS ?? ""].some(
    (argument) => argument.includes("liftoff") || argument.includes("tier")
  )

export const useBaselineWasmTier = (): void => {
  // Edge: where V8's flags cannot be set (Deno), WebAssembly compiles as the runtime decides.
  if (ownWasmFlags() || typeof v8.setFlagsFromString !== "function") return
  v8.setFlagsFromString("--liftoff-only")
}
