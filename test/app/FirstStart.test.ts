/**
 * The first-start banner carries secrets (the new admin token, the demo key). Run as a service — stdout captured by
 * docker or systemd, no terminal — the real entry point must not print them: they go to a file beside the admin
 * token, readable by its owner only, and the log says where, without them.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Gateway, killHard, sleep, startGateway } from "../support/ChildGateway.ts"
import { freePort } from "../support/Ports.ts"

describe("first start without a terminal", () => {
  let dir: string
  let port: number

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tollgate-first-start-"))
    port = await freePort()
  })

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  const env = () => ({ TOLLGATE_DATA_DIR: join(dir, "data") })

  it("writes the admin token and the demo key to a 0600 file, never to its output, and logs where", async () => {
    // stdout and stderr are pipes here: what a service manager captures.
    const gateway: Gateway = await startGateway(env(), port)
    const saved = join(dir, "data", "first-start.txt")
    let output = ""
    try {
      // Written once the store is up, beside the server's start: wait for the log line that says so.
      for (let i = 0; i < 100 && !gateway.output().includes(saved); i++) await sleep(100)
      const token = readFileSync(join(dir, "data", "admin-token"), "utf8").trim()
      const banner = readFileSync(saved, "utf8")
      const key = /sk-[A-Za-z0-9]{40,}/.exec(banner)?.[0]
      assert.include(banner, token)
      assert.isDefined(key)
      assert.strictEqual(statSync(saved).mode & 0o777, 0o600)
      // The saved key works: it is the demo account's.
      const models = await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })
      assert.strictEqual(models.status, 200)
      output = gateway.output()
      assert.notInclude(output, token)
      assert.notInclude(output, key as string)
      assert.include(output, saved)
      assert.include(output, "Tollgate is listening on")
    } finally {
      // Also checks the whole output for anything that looks like a key or a token.
      await killHard(gateway)
    }
  }, 90_000)

  it("a later start has nothing secret to show and leaves the saved file alone", async () => {
    const saved = join(dir, "data", "first-start.txt")
    const before = statSync(saved).mtimeMs
    const gateway = await startGateway(env(), port)
    try {
      for (let i = 0; i < 100 && !gateway.output().includes("Tollgate is listening on"); i++) await sleep(100)
      assert.include(gateway.output(), "Tollgate is listening on")
      assert.notInclude(gateway.output(), "first start")
      assert.strictEqual(statSync(saved).mtimeMs, before)
    } finally {
      await killHard(gateway)
    }
  }, 90_000)
})
