/**
 * The README's first command, as an operator runs it: `npm start` on the embedded defaults (no DATABASE_URL), from
 * this checkout — scripts/start.mjs builds what is missing or stale, then serves in the same process. It answers
 * `/readyz`, serves a billed chat on the simulator, and exits on SIGTERM.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { closesBy, untilAnswers } from "../support/Answers.ts"
import { freePort } from "../support/Ports.ts"

const root = resolve(import.meta.dirname, "../..")

const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
  })

describe("npm start", () => {
  it("serves a billed chat on the embedded store, then exits on SIGTERM", { timeout: 240_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tollgate-npm-start-"))
    const port = await freePort()
    const { DATABASE_URL: _none, ...environment } = process.env
    let output = ""
    // Its own process group: npm, the shell it runs the script in and node are stopped together.
    const child = spawn("npm", ["start", "--silent"], {
      cwd: root,
      env: { ...environment, TOLLGATE_DATA_DIR: dataDir, PORT: String(port), NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true
    })
    child.stdout?.on("data", (chunk) => (output += chunk))
    child.stderr?.on("data", (chunk) => (output += chunk))
    // Signalled as -pid below: without a pid (the spawn failed) that would be this test's own group.
    const group = child.pid
    try {
      if (group === undefined) throw new Error(`npm could not be started:\n${output}`)
      const base = `http://127.0.0.1:${port}`
      await untilAnswers(`${base}/readyz`, Date.now() + 200_000, () => output)
      const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim()
      const admin = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const post = (path: string, body: unknown, headers = admin) =>
        fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) })
      const account = (await (await post("/admin/accounts", { name: "npm-start" })).json()) as { id: string }
      assert.strictEqual(
        (await post(`/admin/accounts/${account.id}/deposits`, { amount: "1", reference: "r" })).status,
        201
      )
      const { key } = (await (await post(`/admin/accounts/${account.id}/keys`, { name: "k" })).json()) as {
        key: string
      }

      const chat = await post(
        "/v1/chat/completions",
        { model: "sim-openai", messages: [{ role: "user", content: "Hello" }], max_tokens: 20 },
        { authorization: `Bearer ${key}`, "content-type": "application/json" }
      )
      assert.strictEqual(chat.status, 200, await chat.clone().text())
      assert.isAbove(((await chat.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens, 0)
      const shown = (await (await fetch(`${base}/admin/accounts/${account.id}`, { headers: admin })).json()) as {
        balance: { held: string; captured: string }
      }
      assert.strictEqual(shown.balance.held, "0.000000")
      assert.notStrictEqual(shown.balance.captured, "0.000000")

      // Stopped: npm exits at once (whatever its code after a signal); the gateway under it drains, then closes its
      // port.
      const exit = exited(child)
      process.kill(-group, "SIGTERM")
      await exit
      assert.isTrue(await closesBy(`${base}/healthz`, Date.now() + 30_000), output)
    } finally {
      try {
        if (group !== undefined) process.kill(-group, "SIGKILL")
      } catch {
        // the whole group is gone
      }
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
