/**
 * undici is loaded by the first upstream call or guarded fetch, not by importing the clients
 * (src/adapters/upstream/LazyUndici.ts): checked in a fresh process, where nothing else has loaded it.
 */
import { assert, describe, it } from "@effect/vitest"
import { inFreshProcess } from "../../support/FreshProcess.ts"

const script = `
import { createRequire } from "node:module"
import { createServer } from "node:http"
import { Effect, Redacted } from "effect"
const { UpstreamClient } = await import("./src/adapters/upstream/UpstreamClient.ts")
await import("./src/adapters/fetch/GuardedFetcher.ts")
const { undiciNow } = await import("./src/adapters/upstream/LazyUndici.ts")
const cache = createRequire(import.meta.url).cache
const loaded = () => Object.keys(cache).filter((path) => /[\\\\/]node_modules[\\\\/]undici[\\\\/]/.test(path)).length
const before = { modules: loaded(), now: undiciNow() !== undefined }
const server = createServer((request, response) => response.end("{}"))
await new Promise((done) => server.listen(0, "127.0.0.1", done))
const upstream = { name: "u", protocol: "openai", baseUrl: "http://127.0.0.1:" + server.address().port + "/v1",
  apiKey: Redacted.make("k"), maxConnections: 1, timeoutMs: 5000, idleTimeoutMs: 5000 }
const status = await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* UpstreamClient
      const response = yield* client.request({ upstream, method: "GET", path: "/models" })
      yield* response.body.text
      return response.status
    })
  ).pipe(Effect.provide(UpstreamClient.layer))
)
server.close()
console.log(JSON.stringify({ before, after: { modules: loaded(), now: undiciNow() !== undefined }, status }))
`

describe("undici", () => {
  it("is loaded by the first upstream call, not by importing the clients", { timeout: 60_000 }, () => {
    const result = inFreshProcess<{
      before: { modules: number; now: boolean }
      after: { modules: number; now: boolean }
      status: number
    }>(script)
    assert.deepStrictEqual(result.before, { modules: 0, now: false })
    assert.isAbove(result.after.modules, 0)
    assert.isTrue(result.after.now)
    assert.strictEqual(result.status, 200)
  })
})
