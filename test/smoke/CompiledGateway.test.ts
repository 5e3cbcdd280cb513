/**
 * The gateway `npm start` runs: scripts/build-gateway.mjs bundles src/ into one ES module, rebuilt only when stale,
 * and that bundle serves as src/ does — its migrations found beside the repository, a plugin written in TypeScript
 * loaded from the operator config (through tsx's loader, registered on demand: src/PluginModules.ts), the tokenizer
 * loaded on the first count — on a fresh database of TEST_DATABASE_URL (the serving test is skipped without one).
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { untilAnswers } from "../support/Answers.ts"
import { freePort } from "../support/Ports.ts"

const root = resolve(import.meta.dirname, "../..")
const script = join(root, "scripts/build-gateway.mjs")
// Inside the repository, so that the bundle's own imports resolve from its node_modules.
const outDir = join(root, "dist", `gateway-test-${process.pid}`)
const databaseUrl = process.env.TEST_DATABASE_URL

const build = (...args: Array<string>) =>
  spawnSync(process.execPath, [script, ...args, "--out", outDir], { cwd: root, encoding: "utf8" })

beforeAll(() => {
  const built = build()
  if (built.status !== 0) throw new Error(`build failed: ${built.stdout}${built.stderr}`)
}, 120_000)
afterAll(() => rmSync(outDir, { recursive: true, force: true }))

describe("the compiled gateway", () => {
  it("is rebuilt only when an input is newer than the bundle", () => {
    const fresh = build("--check")
    assert.strictEqual(fresh.status, 0, fresh.stdout)
    assert.include(fresh.stdout, "up to date")
    const past = new Date("2001-01-01T00:00:00Z")
    utimesSync(join(outDir, "main.js"), past, past)
    const stale = build("--check")
    assert.strictEqual(stale.status, 1)
    assert.match(stale.stdout, /stale: \S+ changed/)
  })

  it.skipIf(databaseUrl === undefined)(
    "serves a chat through a TypeScript plugin from the operator config, billed, on Postgres",
    { timeout: 90_000 },
    async () => {
      const database = `tollgate_compiled_${process.pid}_${randomBytes(3).toString("hex")}`
      const psql = (sql: string) => execFileSync("psql", [databaseUrl ?? "", "-qAtc", sql], { stdio: "pipe" })
      psql(`CREATE DATABASE ${database}`)
      const dir = mkdtempSync(join(tmpdir(), "tollgate-compiled-"))
      const config = join(dir, "tollgate.yaml")
      writeFileSync(
        config,
        `upstreams:
  unused: { protocol: openai, baseUrl: "http://127.0.0.1:9/v1", apiKey: "not-used" }
models:
  - { id: echo-1, plugin: echo, upstreams: [unused], pricing: { perCall: "0.001", output: "2.00" }, maxOutputTokens: 100 }
plugins: ["${join(root, "examples/plugin-echo/index.ts")}"]
`
      )
      const url = new URL(databaseUrl ?? "")
      url.pathname = `/${database}`
      const port = await freePort()
      const token = randomBytes(24).toString("hex")
      let child: ChildProcess | undefined
      let output = ""
      try {
        child = spawn(process.execPath, [join(outDir, "main.js")], {
          cwd: root,
          env: {
            ...process.env,
            NODE_OPTIONS: "",
            PORT: String(port),
            DATABASE_URL: url.toString(),
            TOLLGATE_ADMIN_TOKEN: token,
            TOLLGATE_CONFIG: config,
            TOLLGATE_DATA_DIR: dir
          },
          stdio: ["ignore", "pipe", "pipe"]
        })
        child.stdout?.on("data", (chunk) => (output += chunk))
        child.stderr?.on("data", (chunk) => (output += chunk))
        const base = `http://127.0.0.1:${port}`
        await untilAnswers(`${base}/readyz`, Date.now() + 60_000, () => output)
        const admin = async (path: string, body: unknown) => {
          const response = await fetch(`${base}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify(body)
          })
          assert.strictEqual(response.status, 201, await response.clone().text())
          return (await response.json()) as Record<string, string>
        }
        const account = await admin("/admin/accounts", { name: "compiled" })
        await admin(`/admin/accounts/${account.id}/deposits`, { amount: "1.00", reference: "compiled" })
        const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "k" })
        const reply = await fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "echo-1", messages: [{ role: "user", content: "compiled and served" }] })
        })
        const body = (await reply.json()) as { choices: Array<{ message: { content: string } }> }
        assert.strictEqual(reply.status, 200, JSON.stringify(body))
        assert.strictEqual(body.choices[0]?.message.content, "compiled and served")
        assert.match(reply.headers.get("x-tollgate-cost") ?? "", /^0\.00100\d$/)
      } finally {
        child?.kill("SIGTERM")
        if (child !== undefined && child.exitCode === null) await new Promise((done) => child?.once("exit", done))
        psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
        rmSync(dir, { recursive: true, force: true })
      }
    }
  )
})
