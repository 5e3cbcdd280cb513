/**
 * The same entry point runs under Deno (the `deno` npm package ships the binary): it starts on the embedded store,
 * serves /healthz and the admin API.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const waitFor = async (url: string, deadline: number): Promise<void> => {
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
      if (response.ok) return
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`${url} did not answer in time`)
}

describe("Deno", () => {
  it("serves /healthz and the admin API from src/main.ts on the embedded store", { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tollgate-deno-"))
    const port = 20_000 + Math.floor(Math.random() * 20_000)
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
      await waitFor(`${base}/healthz`, Date.now() + 60_000)
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
