/**
 * Clients that go away: mid-upload (a transcription whose multipart body stops halfway) and while a video download
 * is in flight. Neither leaves a hold, a charge or a stuck request behind, and the gateway keeps serving. (Mid-stream
 * disconnects of chat and speech, where the upstream is aborted and only what was delivered is paid, are in
 * test/http/chat/failures.test.ts and test/http/audio/Speech.test.ts.)
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { request } from "node:http"
import { makeWav } from "../adapters/simulator/audio/AudioHttp.ts"
import { api, startVideoHarness, type VideoHarness } from "../http/videos/VideoHarness.ts"
import { closeAfterReplay, makeAdmin } from "../http/chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("a client that disconnects mid-upload", () => {
  let gateway: TestGateway
  beforeAll(async () => {
    gateway = await startTestGateway({ video: { enabled: false } })
  }, 60_000)
  // Like every fault suite: it ends with replay verifying the projections against the events.
  afterAll(() =>
    closeAfterReplay(gateway === undefined ? undefined : { admin: makeAdmin(gateway), close: () => gateway.close() })
  )

  it("is charged nothing, and the gateway answers the next request", { timeout: 60_000 }, async () => {
    const admin = makeAdmin(gateway)
    const customer = await admin.customer({ deposit: "5" })
    const wav = makeWav(20)
    const boundary = "----tollgate-cut"
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nsim-transcribe\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`
    )
    const total = head.length + wav.length + 64
    const url = new URL(`${gateway.url}/v1/audio/transcriptions`)
    await new Promise<void>((resolve) => {
      const upload = request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: {
          authorization: `Bearer ${customer.key}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": String(total)
        }
      })
      upload.on("error", () => resolve())
      upload.on("close", () => resolve())
      upload.write(head)
      upload.write(wav.subarray(0, Math.floor(wav.length / 2)))
      // Half the file went out; the client vanishes.
      setTimeout(() => upload.destroy(), 200)
    })
    await sleep(300)
    const entries = await admin.ledger(customer.accountId)
    assert.deepStrictEqual(
      entries.map((e) => e.type),
      ["AccountOpened", "FundsDeposited"]
    )
    assert.strictEqual((await admin.balance(customer.accountId)).held, "0.000000")
    assert.strictEqual((await fetch(`${gateway.url}/healthz`)).status, 200)
  })
})

describe("a client that disconnects while a video downloads", () => {
  let harness: VideoHarness
  beforeAll(async () => {
    harness = await startVideoHarness({ videoMillis: 300 })
  }, 60_000)
  afterAll(() => closeAfterReplay(harness))

  it("changes nothing in the ledger; the next download is whole", { timeout: 120_000 }, async () => {
    const customer = await harness.admin.customer({ deposit: "5" })
    const submitted = await api(harness.gateway, customer.key, "POST", "/v1/videos", {
      model: "video-model-2.0-fast",
      prompt: "a lighthouse",
      seconds: "4",
      metadata: { resolution: "480p" }
    })
    let task = submitted.body
    for (let i = 0; i < 600 && task.status !== "completed" && task.status !== "failed"; i++) {
      await sleep(100)
      task = (await api(harness.gateway, customer.key, "GET", `/v1/videos/${submitted.body.id}`)).body
    }
    assert.strictEqual(task.status, "completed")
    const before = await harness.admin.ledger(customer.accountId)

    const controller = new AbortController()
    const partial = await fetch(`${harness.gateway.url}/v1/videos/${task.id}/content`, {
      headers: { authorization: `Bearer ${customer.key}` },
      signal: controller.signal
    })
    assert.strictEqual(partial.status, 200)
    const length = Number(partial.headers.get("content-length"))
    await partial.body?.getReader().read()
    controller.abort()
    await sleep(200)

    assert.deepStrictEqual(await harness.admin.ledger(customer.accountId), before)
    const whole = await fetch(`${harness.gateway.url}/v1/videos/${task.id}/content`, {
      headers: { authorization: `Bearer ${customer.key}` }
    })
    assert.strictEqual((await whole.arrayBuffer()).byteLength, length)
  })
})
