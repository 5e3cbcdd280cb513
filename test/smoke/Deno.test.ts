/**
 * The same entry point runs under Deno (the `deno` npm package ships the binary): it starts on the embedded store,
 * serves /healthz, the admin API and `/v1` (a chat and a stream, each held and settled in the ledger, replay clean).
 * `npm run deno:smoke` runs this file alone.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { untilAnswers } from "../support/Answers.ts"
import { freePort } from "../support/Ports.ts"

describe("Deno", () => {
  it("serves /healthz, the admin API and /v1 (a chat, a stream, each held and settled) from src/main.ts", {
    timeout: 120_000
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tollgate-deno-"))
    const port = await freePort()
    let child: ChildProcess | undefined
    let output = ""
    try {
      child = spawn("node_modules/.bin/deno", ["run", "-A", "src/main.ts"], {
        env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, PORT: String(port), NODE_OPTIONS: "" },
        stdio: ["ignore", "pipe", "pipe"]
      })
      child.stdout?.on("data", (chunk) => (output += chunk))
      child.stderr?.on("data", (chunk) => (output += chunk))
      const base = `http://127.0.0.1:${port}`
      await untilAnswers(`${base}/healthz`, Date.now() + 60_000)
      const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim()
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const created = await fetch(`${base}/admin/accounts`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: "from-deno" })
      })
      assert.strictEqual(created.status, 201)
      const account = (await created.json()) as { id: string }
      const deposit = await fetch(`${base}/admin/accounts/${account.id}/deposits`, {
        method: "POST",
        headers,
        body: JSON.stringify({ amount: "2.50", reference: "deno" })
      })
      assert.strictEqual(deposit.status, 201)
      const shown = (await (await fetch(`${base}/admin/accounts/${account.id}`, { headers })).json()) as {
        balance: { available: string }
      }
      assert.strictEqual(shown.balance.available, "2.500000")
      const issued = await fetch(`${base}/admin/accounts/${account.id}/keys`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: "deno" })
      })
      assert.strictEqual(issued.status, 201)
      const { key } = (await issued.json()) as { key: string }
      const v1 = { authorization: `Bearer ${key}`, "content-type": "application/json" }
      const chatBody = { model: "sim-openai", messages: [{ role: "user", content: "Hello from Deno" }], max_tokens: 40 }

      const chat = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: v1,
        body: JSON.stringify(chatBody)
      })
      assert.strictEqual(chat.status, 200)
      const completion = (await chat.json()) as {
        choices: Array<{ message: { content: string } }>
        usage: { prompt_tokens: number; completion_tokens: number }
      }
      assert.isAbove(completion.choices[0]?.message.content.length ?? 0, 0)
      assert.isAbove(completion.usage.completion_tokens, 0)

      const streamed = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: v1,
        body: JSON.stringify({ ...chatBody, stream: true, stream_options: { include_usage: true } })
      })
      assert.strictEqual(streamed.status, 200)
      assert.match(streamed.headers.get("content-type") ?? "", /^text\/event-stream/)
      const events = (await streamed.text()).split("\n").filter((line) => line.startsWith("data: "))
      assert.strictEqual(events.at(-1), "data: [DONE]")
      const usageChunk = events
        .slice(0, -1)
        .map((line) => JSON.parse(line.slice("data: ".length)) as { usage?: { completion_tokens: number } | null })
        .find((chunk) => chunk.usage != null)
      assert.isAbove(usageChunk?.usage?.completion_tokens ?? 0, 0)

      // Each call placed a hold and settled it: a usage capture and the refund of the rest, nothing left held.
      const ledger = (await (
        await fetch(`${base}/admin/accounts/${account.id}/ledger?limit=50`, { headers })
      ).json()) as {
        data: Array<{ type: string; holdId: string | null }>
      }
      const holds = ledger.data.filter((entry) => entry.type === "HoldPlaced")
      assert.strictEqual(holds.length, 2)
      for (const hold of holds) {
        const settled = ledger.data.filter((entry) => entry.holdId === hold.holdId && entry.type !== "HoldPlaced")
        assert.isTrue(
          settled.some((entry) => entry.type === "UsageRecalculated"),
          JSON.stringify(ledger.data)
        )
      }
      const after = (await (await fetch(`${base}/admin/accounts/${account.id}`, { headers })).json()) as {
        balance: { held: string; captured: string; available: string }
      }
      assert.strictEqual(after.balance.held, "0.000000")
      assert.notStrictEqual(after.balance.captured, "0.000000")

      const replay = (await (await fetch(`${base}/admin/replay`, { method: "POST", headers })).json()) as {
        ok: boolean
      }
      assert.isTrue(replay.ok)
    } catch (error) {
      throw new Error(`${String(error)}\n--- deno output ---\n${output}`)
    } finally {
      child?.kill("SIGTERM")
      await new Promise((resolve) => setTimeout(resolve, 500))
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
