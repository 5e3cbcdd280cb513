import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const repository = fileURLToPath(new URL("../../../", import.meta.url))

/**
 * A WebAssembly module whose one function, `f(n)`, sums n, n-1, …, 1 in a loop: run hot, V8 recompiles it with
 * TurboFan unless WebAssembly is held on Liftoff.
 */
const HOT_MODULE = [
  [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // magic, version
  [0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f], // type: (i32) -> i32
  [0x03, 0x02, 0x01, 0x00], // one function of that type
  [0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00], // exported as "f"
  [0x0a, 0x23, 0x01, 0x21, 0x01, 0x01, 0x7f], // code: one body, one i32 local (the sum)
  [0x02, 0x40, 0x03, 0x40, 0x20, 0x00, 0x45, 0x0d, 0x01], // block, loop, exit when n = 0
  [0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x01], // sum += n
  [0x20, 0x00, 0x41, 0x01, 0x6b, 0x21, 0x00, 0x0c, 0x00], // n -= 1, again
  [0x0b, 0x0b, 0x20, 0x01, 0x0b] // end loop, end block, the sum
].flat()

/**
 * A child process's script: optionally the embedded store opened and queried, then the hot module run. Loading its
 * modules compiles WebAssembly of Node's own (its CommonJS lexer), some of it hot, before the store opens: what is
 * counted starts at the marker line, once that has settled.
 */
const MARKER = "-- the store opens --"
const script = (openStore: boolean) => `
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "./src/adapters/store/Database.ts"
await new Promise((resolve) => setTimeout(resolve, 500))
console.log(${JSON.stringify(MARKER)})
if (${openStore}) {
  const queries = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (let i = 0; i < 500; i++) yield* sql\`SELECT \${i}::int + 1 AS x\`
  })
  await Effect.runPromise(Effect.scoped(Effect.provide(queries, Database.layer({ kind: "pglite", dataDir: undefined }))))
}
const { instance } = await WebAssembly.instantiate(new Uint8Array(${JSON.stringify(HOT_MODULE)}))
for (let round = 0; round < 2; round++) {
  for (let i = 0; i < 300; i++) instance.exports.f(100000)
  await new Promise((resolve) => setTimeout(resolve, 100))
}
`

/** How many functions V8 compiled with TurboFan while `script` ran (`--trace-wasm-compilation-times`). */
const turboFanCompilations = (openStore: boolean): number => {
  const output = execFileSync(
    process.execPath,
    ["--trace-wasm-compilation-times", "--import", "tsx", "--input-type=module", "-e", script(openStore)],
    { cwd: repository, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" }, maxBuffer: 64 * 1024 * 1024 }
  )
  const marker = output.indexOf(MARKER)
  if (marker === -1) throw new Error(`the child process never reached its marker:\n${output.slice(-2000)}`)
  const after = output.slice(marker)
  return after.split("\n").filter((line) => line.includes("using TurboFan")).length
}

describe("WebAssembly in an embedded gateway", () => {
  it("is recompiled by TurboFan when hot in a process without the embedded store (the check below can fail)", () => {
    expect(turboFanCompilations(false)).toBeGreaterThan(0)
  }, 60_000)

  it("stays on Liftoff once the embedded store is open: PGlite's functions and any module compiled after", () => {
    expect(turboFanCompilations(true)).toBe(0)
  }, 120_000)
})
