/**
 * `GET /v1/videos/{id}/content` after the retention period: 410 `video_expired` in the OpenAI envelope. The routes run
 * in-process (no listening server) so the whole gateway, HTTP included, reads the `TestClock`; the worker loop is off
 * and each round is `pollDue` by hand.
 */
import { memoryPglite } from "../../support/PgliteTemplate.ts"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { routesLayer, servicesLayer } from "../../../src/AppLayer.ts"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { VideoTasks } from "../../../src/app/VideoTasks.ts"
import { FAST, videoConfigYaml } from "./VideoHarness.ts"

let sim: RunningSimulator
let dir: string
let configPath: string
beforeAll(async () => {
  sim = await startSimulator({ videoMillis: 150 })
  dir = mkdtempSync(join(tmpdir(), "tollgate-videoexpiry-"))
  configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, videoConfigYaml(sim.baseUrl, 100))
}, 30_000)
afterAll(async () => {
  await sim.close()
  rmSync(dir, { recursive: true, force: true })
})

const ADMIN = `tga_test_${randomUUID().replaceAll("-", "")}`

const services = () =>
  servicesLayer({
    database: memoryPglite(),
    adminToken: Redacted.make(ADMIN),
    maxBodyBytes: 1024 * 1024,
    configPath,
    contentDir: join(dir, `content-${randomUUID()}`),
    video: { enabled: false },
    // The clock jumps a week: the ledger's hold sweep (every 15 s by default, a query each) is not under test here.
    ledger: { sweepIntervalMillis: 3_600_000 },
    // Nor is the background-responses worker, whose idle claim round (a query every 500 ms) would run a million times.
    responses: { pollMillis: 3_600_000, renewMillis: 3_600_000 },
    // Nor the batch worker's claim round (every second when busy, ten when idle).
    batches: { enabled: false },
    // Nor is the audit chain's checkpoint (every 10 minutes: a thousand rounds of queries in a week).
    auditCheckpointMillis: 30 * 86_400_000
  })

const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

describe("video content after expiry (TestClock)", () => {
  it.effect("answers 410 video_expired in the OpenAI envelope once the retention period has passed", () =>
    Effect.gen(function* () {
      const handler = yield* HttpRouter.toHttpEffect(routesLayer)
      const call = (method: string, path: string, token: string, body?: unknown) =>
        Effect.gen(function* () {
          const request = new Request(`http://gateway.test${path}`, {
            method,
            headers: {
              authorization: `Bearer ${token}`,
              ...(body === undefined ? {} : { "content-type": "application/json" })
            },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
          const response = yield* Effect.provideService(
            Effect.scoped(handler),
            HttpServerRequest.HttpServerRequest,
            HttpServerRequest.fromWeb(request)
          )
          const web = HttpServerResponse.toWeb(response)
          const text = yield* Effect.promise(() => web.text())
          // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the gateway answered
          const json: any = web.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text
          return { status: web.status, body: json, headers: web.headers }
        })
      const account = yield* call("POST", "/admin/accounts", ADMIN, { name: "expiry" })
      assert.strictEqual(account.status, 201, JSON.stringify(account.body))
      yield* call("POST", `/admin/accounts/${account.body.id}/deposits`, ADMIN, { amount: "10", reference: "d-1" })
      const key = yield* call("POST", `/admin/accounts/${account.body.id}/keys`, ADMIN, { name: "k" })
      assert.strictEqual(key.status, 201, JSON.stringify(key.body))
      const apiKey: string = key.body.key

      const submitted = yield* call("POST", "/v1/videos", apiKey, {
        model: FAST,
        prompt: "a clip that will expire",
        seconds: "4",
        metadata: { resolution: "480p", ratio: "16:9" }
      })
      assert.strictEqual(submitted.status, 200, JSON.stringify(submitted.body))
      const id: string = submitted.body.id
      const videos = yield* VideoTasks
      for (let i = 0; i < 200; i++) {
        yield* videos.pollDue
        if ((yield* call("GET", `/v1/videos/${id}`, apiKey)).body.status === "completed") break
        yield* TestClock.adjust("150 millis")
        yield* realSleep(30)
      }
      const done = yield* call("GET", `/v1/videos/${id}`, apiKey)
      assert.strictEqual(done.body.status, "completed", JSON.stringify(done.body))
      assert.strictEqual(done.body.expires_at - done.body.completed_at, 7 * 86_400)
      const fresh = yield* call("GET", `/v1/videos/${id}/content`, apiKey)
      assert.strictEqual(fresh.status, 200)
      assert.strictEqual(fresh.headers.get("content-type"), "video/mp4")

      // Past the expiry, before the sweep ran: already 410 (the row's expires_at decides).
      yield* TestClock.adjust("7 days")
      const expired = yield* call("GET", `/v1/videos/${id}/content`, apiKey)
      assert.strictEqual(expired.status, 410)
      assert.deepStrictEqual(expired.body, {
        error: {
          message: `The content of video '${id}' has expired and was deleted.`,
          type: expired.body.error.type,
          param: null,
          code: "video_expired"
        }
      })
      assert.isString(expired.body.error.type)
      // After the sweep deleted the file and recorded the expiry: still 410, and the task itself stays readable.
      assert.strictEqual(yield* videos.sweepExpiredContent, 1)
      const swept = yield* call("GET", `/v1/videos/${id}/content`, apiKey)
      assert.strictEqual(swept.status, 410)
      assert.strictEqual(swept.body.error.code, "video_expired")
      const task = yield* call("GET", `/v1/videos/${id}`, apiKey)
      assert.strictEqual(task.status, 200)
      assert.strictEqual(task.body.status, "completed")
    }).pipe(Effect.provide(Layer.fresh(services())))
  )
})
