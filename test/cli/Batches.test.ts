/**
 * The operator's batches end to end on the batch gateway (test/http/batches/BatchHarness.ts, in-memory PGlite):
 * `/admin/batches` and `tollgate batches list/show/cancel/tail` against it, the batch figures of `/metrics`, and the
 * money the admin view shows checked against each line's charge in the usage report.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ProgressStream, ProgressOutput } from "../../src/cli/commands/VideosProgress.ts"
import { batchProgress, batchSummaryLine } from "../../src/cli/commands/BatchesView.ts"
import { runCli } from "../../src/cli/runCli.ts"
import { type BatchGateway, micros, startBatchGateway } from "../http/batches/BatchHarness.ts"

let harness: BatchGateway

beforeAll(async () => {
  harness = await startBatchGateway()
}, 30_000)

afterAll(async () => {
  await harness?.close()
})

const cli = async (argv: ReadonlyArray<string>) => {
  const chunks: Array<string> = []
  const stream: ProgressStream = { isTTY: false, write: (chunk) => chunks.push(chunk) }
  const result = await Effect.runPromise(
    runCli([...argv, "--url", harness.gateway.url], { TOLLGATE_ADMIN_TOKEN: harness.gateway.adminToken }).pipe(
      Effect.provideService(ProgressOutput, stream)
    )
  )
  return { ...result, progress: chunks }
}

/** A message batch of `models.length` one-line requests, submitted as its holder would. */
const submit = async (key: string, models: ReadonlyArray<string>) => {
  const response = await fetch(`${harness.gateway.url}/v1/messages/batches`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({
      requests: models.map((model, i) => ({
        custom_id: `r${i}`,
        params: { model, max_tokens: 16, messages: [{ role: "user", content: `Line ${i}.` }] }
      }))
    })
  })
  expect(response.status).toBe(200)
  return ((await response.json()) as { id: string }).id
}

const charges = async (key: string) =>
  (
    (await (
      await fetch(`${harness.gateway.url}/v1/usage/requests?limit=1000`, {
        headers: { authorization: `Bearer ${key}` }
      })
    ).json()) as { data: ReadonlyArray<{ requestId: string; held: string; cost: string }> }
  ).data

describe("tollgate batches", () => {
  it("tail follows a batch to its end; show, list and /metrics agree with the ledger", async () => {
    const customer = await harness.admin.customer({ deposit: "5" })
    const id = await submit(customer.key, ["sim-openai", "sim-openai", "sim-gemini", "broken-model"])
    const tailed = await cli(["batches", "tail", id, "--poll-interval", "100"])
    expect(tailed.exitCode, tailed.stderr).toBe(0)
    expect(tailed.progress.at(-1)).toBe(`${id}  completed 4/4 lines  100%\n`)

    const shown = await cli(["batches", "show", id, "--json"])
    expect(shown.exitCode, shown.stderr).toBe(0)
    const batch = JSON.parse(shown.stdout)
    expect(batch).toMatchObject({
      id,
      accountId: customer.accountId,
      keyId: customer.keyId,
      surface: "anthropic",
      status: "completed",
      requestCounts: { total: 4, completed: 3, failed: 1, pending: 0 },
      held: "0.000000"
    })
    expect(batch.endedAt).not.toBeNull()
    // What the lines' holds captured and refunded, line by line from the usage report.
    const lines = (await charges(customer.key)).filter((c) => c.requestId.startsWith(`${id}/`))
    expect(lines).toHaveLength(4)
    const charged = lines.reduce((sum, c) => sum + micros(c.cost), 0n)
    const refunded = lines.reduce((sum, c) => sum + micros(c.held) - micros(c.cost), 0n)
    expect(charged).toBeGreaterThan(0n)
    expect(micros(batch.charged)).toBe(charged)
    expect(micros(batch.refunded)).toBe(refunded)
    expect(tailed.stdout.trim()).toBe(batchSummaryLine(batch))

    const listed = await cli(["batches", "list", "--account", customer.accountId, "--status", "completed"])
    expect(listed.exitCode, listed.stderr).toBe(0)
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+${customer.accountId}\\s+anthropic\\s+completed\\s+4/4\\s+1`))
    const none = await cli(["batches", "list", "--account", customer.accountId, "--status", "failed"])
    expect(none.stdout.trim()).toBe("No batches.")

    const metrics = await (await fetch(`${harness.gateway.url}/metrics`)).text()
    expect(metrics).toMatch(/^tollgate_batches\{status="completed"\} [1-9]/m)
    expect(metrics).toContain('tollgate_batch_lines_total{endpoint="/v1/messages",outcome="succeeded"} 3')
    expect(metrics).toContain('tollgate_batch_lines_total{endpoint="/v1/messages",outcome="failed"} 1')
    expect(metrics).toContain(`tollgate_batch_line_charged_micro_usd_total{endpoint="/v1/messages"} ${charged}`)
  }, 30_000)

  it("cancel is the holder's cancellation; a second one is refused; tail then prints the end", async () => {
    const customer = await harness.admin.customer({ deposit: "5" })
    const id = await submit(
      customer.key,
      Array.from({ length: 16 }, () => "slow-model")
    )
    const cancelled = await cli(["batches", "cancel", id])
    expect(cancelled.exitCode, cancelled.stderr).toBe(0)
    expect(cancelled.stdout).toMatch(/status\s+cancelling/)
    const tailed = await cli(["batches", "tail", id, "--poll-interval", "100"])
    expect(tailed.exitCode, tailed.stderr).toBe(0)
    expect(tailed.stdout).toContain(`${id} cancelled:`)
    // The holder sees its batch ended, as its own cancel would have left it.
    const own = await fetch(`${harness.gateway.url}/v1/messages/batches/${id}`, {
      headers: { "x-api-key": customer.key, "anthropic-version": "2023-06-01" }
    })
    expect(((await own.json()) as { processing_status: string }).processing_status).toBe("ended")
    const again = await cli(["batches", "cancel", id])
    expect(again.exitCode).toBe(1)
    expect(again.stderr).toMatch(/HTTP 409/)
    const shown = JSON.parse((await cli(["batches", "show", id, "--json"])).stdout)
    expect(shown.held).toBe("0.000000")
  }, 30_000)

  it("pages every account's batches newest first; refuses bad filters and unknown batches", async () => {
    const { call } = harness.admin
    // The two batches of the tests above, newest first, a page of one at a time.
    const first = (await call("GET", "/admin/batches?limit=1")).body
    expect(first).toMatchObject({ object: "list", has_more: true })
    const second = (await call("GET", `/admin/batches?limit=1&after=${first.last_id}`)).body
    expect(second.data[0].id).not.toBe(first.last_id)
    expect(Date.parse(second.data[0].createdAt)).toBeLessThanOrEqual(Date.parse(first.data[0].createdAt))
    const more = await cli(["batches", "list", "--limit", "1"])
    expect(more.stdout).toContain(`More: tollgate batches list --after ${first.last_id}`)
    expect((await call("GET", "/admin/batches?accountId=nope")).status).toBe(400)
    expect((await call("GET", "/admin/batches?status=done")).body.error.param).toBe("status")
    expect((await call("GET", "/admin/batches?limit=0")).status).toBe(400)
    expect((await call("GET", "/admin/batches/batch_missing")).status).toBe(404)
    expect((await call("POST", "/admin/batches/batch_missing/cancel")).status).toBe(404)
    expect((await fetch(`${harness.gateway.url}/admin/batches`)).status).toBe(401)
    const missing = await cli(["batches", "show", "batch_missing"])
    expect(missing.exitCode).toBe(1)
    expect(missing.stderr).toMatch(/HTTP 404/)
    const usage = await cli(["batches", "list", "--status", "done"])
    expect(usage.exitCode).toBe(2)
  })

  it("shows progress as lines done out of all", () => {
    const batch = { id: "b", status: "in_progress", requestCounts: { total: 8, completed: 1, failed: 1 } }
    expect(batchProgress(batch)).toEqual({ label: "in_progress 2/8 lines", percent: 25 })
  })
})
