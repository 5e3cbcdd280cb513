/**
 * The access log, read from the real entry point's JSON output (`src/main.ts` on the embedded store with its built-in
 * simulator): one line per request, found by the `x-request-id` a client quotes, with the key's id (never the key),
 * the account, model, upstream, status, tokens, cost (the ledger's own figure) and duration — a stream's once it ended.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  ADMIN_TOKEN,
  admin,
  type Gateway,
  killHard,
  ledgerOf,
  readDeltas,
  startGateway
} from "../support/ChildGateway.ts"
import { freePort } from "../support/Ports.ts"

interface AccessLine {
  readonly requestId: string
  readonly method: string
  readonly route: string
  readonly status: number
  readonly keyId: string | null
  readonly accountId: string | null
  readonly model: string | null
  readonly upstream: string | null
  readonly inputTokens: number | null
  readonly outputTokens: number | null
  readonly cost: string | null
  readonly durationMs: number
}

/** The access lines in the output so far (Effect's JSON logger: the fields are the line's annotations). */
const accessLines = (output: string): ReadonlyArray<AccessLine> =>
  output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { message: unknown; annotations?: AccessLine })
    .filter((line) => line.message === "request" || (Array.isArray(line.message) && line.message[0] === "request"))
    .map((line) => line.annotations as AccessLine)

describe("access log", () => {
  let dir: string
  let gateway: Gateway

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tollgate-access-"))
    gateway = await startGateway(
      { TOLLGATE_DATA_DIR: join(dir, "data"), TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN },
      await freePort()
    )
  }, 90_000)

  afterAll(async () => {
    if (gateway !== undefined) await killHard(gateway)
    rmSync(dir, { recursive: true, force: true })
  })

  const lineFor = async (requestId: string): Promise<AccessLine> => {
    for (let i = 0; i < 50; i++) {
      const line = accessLines(gateway.output()).find((l) => l.requestId === requestId)
      if (line !== undefined) return line
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`no access line for ${requestId}`)
  }

  it("one line per request, found by its request id, with who, what, where, and what it cost", async () => {
    const account = (await admin(gateway, "POST", "/admin/accounts", { name: "logged" })).body
    await admin(gateway, "POST", `/admin/accounts/${account.id}/deposits`, { amount: "5", reference: "l-1" })
    const created = (await admin(gateway, "POST", `/admin/accounts/${account.id}/keys`, { name: "k" })).body
    const call = (body: Record<string, unknown>) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${created.key}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      })
    const messages = [{ role: "user", content: "Hello there" }]

    const json = await call({ model: "sim-openai", messages, max_tokens: 20 })
    assert.strictEqual(json.status, 200)
    await json.text()
    const stream = await call({ model: "sim-anthropic", messages, max_tokens: 20, stream: true })
    assert.isTrue(await readDeltas(stream, () => undefined))
    const missing = await call({ model: "no-such-model", messages })
    await missing.text()

    const entries = await ledgerOf(gateway, account.id)
    const captured = (requestId: string) => {
      const hold = entries.find((e) => e.type === "HoldPlaced" && (e as { requestId?: string }).requestId === requestId)
      return entries.find((e) => e.type === "UsageRecalculated" && e.holdId === hold?.holdId)?.amount
    }
    for (const [response, model] of [
      [json, "sim-openai"],
      [stream, "sim-anthropic"]
    ] as const) {
      const requestId = response.headers.get("x-request-id") as string
      const line = await lineFor(requestId)
      assert.deepInclude(line, {
        method: "POST",
        route: "/v1/chat/completions",
        status: 200,
        keyId: created.id,
        accountId: account.id,
        model
      })
      assert.isString(line.upstream)
      assert.isAbove(line.inputTokens ?? 0, 0)
      assert.isAbove(line.outputTokens ?? 0, 0)
      assert.strictEqual(line.cost, captured(requestId))
      assert.isAbove(line.durationMs, 0)
    }
    const refused = await lineFor(missing.headers.get("x-request-id") as string)
    assert.deepInclude(refused, { status: 404, keyId: created.id, model: "no-such-model", cost: null, upstream: null })
    // The key itself is in no line (killHard checks the whole output for secrets as well).
    assert.notInclude(gateway.output(), created.key)
  }, 60_000)
})
