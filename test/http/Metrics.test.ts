/**
 * `GET /metrics` in Prometheus' text format: guarded by TOLLGATE_METRICS_TOKEN when set, per-request series by route
 * pattern, method, model and status (an unknown model is one `unknown` label), upstream and overhead histograms, and
 * the store's figures read at scrape time (events appended, holds outstanding, video tasks by state).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type Admin, type Customer, makeAdmin } from "./chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const METRICS_TOKEN = "mt_test_scrape_token"

let gateway: TestGateway
let admin: Admin
let customer: Customer

beforeAll(async () => {
  gateway = await startTestGateway({ metricsToken: METRICS_TOKEN, video: { enabled: false } })
  admin = makeAdmin(gateway)
  customer = await admin.customer({ deposit: "10" })
}, 60_000)
afterAll(() => gateway?.close())

const post = (path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const scrape = async () => {
  const response = await fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  assert.strictEqual(response.status, 200)
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
  return response.text()
}

/** The value of the sample `name{labels}` (labels in any order), or undefined. */
const sample = (text: string, name: string, labels: Record<string, string> = {}): number | undefined => {
  for (const line of text.split("\n")) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null || match[1] !== name) continue
    const found = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3])
  }
  return undefined
}

describe("GET /metrics", () => {
  it("refuses a scrape without the token, or with a wrong one, and never echoes the token", async () => {
    const missing = await fetch(`${gateway.url}/metrics`)
    assert.strictEqual(missing.status, 401)
    assert.strictEqual(missing.headers.get("www-authenticate"), "Bearer")
    const wrong = await fetch(`${gateway.url}/metrics`, { headers: { authorization: "Bearer nope" } })
    assert.strictEqual(wrong.status, 401)
    assert.notInclude(await wrong.text(), METRICS_TOKEN)
  })

  it("counts requests by route pattern, model and status, with upstream and overhead histograms", async () => {
    const chat = await post("/v1/chat/completions", {
      model: "sim-openai",
      messages: [{ role: "user", content: "Hello" }],
      max_tokens: 16
    })
    assert.strictEqual(chat.status, 200)
    await chat.text()
    const unknown = await post("/v1/chat/completions", { model: "no-such-model-xyz", messages: [] })
    assert.strictEqual(unknown.status, 404)
    await unknown.text()
    const video = await post("/v1/videos", {
      model: "video-model-2.0-fast",
      prompt: "a fox",
      seconds: "4",
      metadata: { resolution: "480p" }
    })
    assert.strictEqual(video.status, 200, await video.clone().text())
    await video.text()

    const text = await scrape()
    const chatLabels = { route: "/v1/chat/completions", method: "POST", model: "sim-openai", status: "200" }
    assert.strictEqual(sample(text, "tollgate_http_requests_total", chatLabels), 1)
    assert.strictEqual(sample(text, "tollgate_http_request_duration_seconds_count", chatLabels), 1)
    assert.strictEqual(
      sample(text, "tollgate_http_requests_total", { route: "/v1/chat/completions", model: "unknown", status: "404" }),
      1
    )
    assert.notInclude(text, "no-such-model-xyz")
    const upstream = sample(text, "tollgate_upstream_duration_seconds_count", {
      route: "/v1/chat/completions",
      model: "sim-openai"
    })
    assert.strictEqual(upstream, 1)
    assert.isAbove(sample(text, "tollgate_upstream_duration_seconds_sum", { model: "sim-openai" }) ?? 0, 0)
    assert.strictEqual(sample(text, "tollgate_gateway_overhead_seconds_count", { route: "/v1/chat/completions" }), 2)
    assert.strictEqual(
      sample(text, "tollgate_http_requests_total", { route: "/v1/videos", model: "video-model-2.0-fast" }),
      1
    )

    // Store figures: the queued video's hold is the one outstanding; the chat's was settled.
    assert.strictEqual(sample(text, "tollgate_holds_outstanding"), 1)
    const ledger = await admin.ledger(customer.accountId)
    const videoHold = ledger.find((entry) => entry.type === "HoldPlaced" && entry.model === "video-model-2.0-fast")
    assert.isDefined(videoHold)
    const heldMicros = Math.round(Number(videoHold?.amount) * 1_000_000)
    assert.strictEqual(sample(text, "tollgate_holds_outstanding_micro_usd"), heldMicros)
    assert.strictEqual(sample(text, "tollgate_video_tasks", { status: "queued" }), 1)
    assert.strictEqual(sample(text, "tollgate_video_tasks", { status: "completed" }), 0)
    assert.isAbove(sample(text, "tollgate_ledger_events_appended") ?? 0, ledger.length - 1)
    // This instance's writers: at least the account's opening, deposit, the chat's hold and settlement and the
    // video's hold, in as many batches or fewer; one instance on its own database never collides.
    const commands = sample(text, "tollgate_ledger_commands_total") ?? 0
    const batches = sample(text, "tollgate_ledger_batches_total") ?? 0
    assert.isAtLeast(commands, 5)
    assert.isAtLeast(batches, 1)
    assert.isAtMost(batches, commands)
    assert.strictEqual(sample(text, "tollgate_ledger_batch_retries_total"), 0)
    assert.strictEqual(sample(text, "tollgate_ledger_batch_isolations_total"), 0)
    // The chat settled (nothing live), the video's hold has no expiry (its worker governs it), nothing is deferred.
    assert.strictEqual(sample(text, "tollgate_holds_live"), 0)
    assert.strictEqual(sample(text, "tollgate_settlements_deferred"), 0)
    assert.isDefined(sample(text, "tollgate_process_resident_memory_bytes"))
    // A scrape is not an API request: it is not counted.
    assert.isUndefined(sample(text, "tollgate_http_requests_total", { route: "/metrics" }))
  })
})
