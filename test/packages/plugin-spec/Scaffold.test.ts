/**
 * `npx @tollgate/plugin-spec init <kind>` from the packed spec: it writes a plugin folder that type-checks with plain
 * `tsc` against the installed tarball and its own `effect`, and whose plugin passes the spec's contract checks against
 * the fake vendor it ships (run here through `endpointContractChecks`; `npm test` there runs the same suite).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const ROOT = resolve(import.meta.dirname, "../../..")
const SPEC = join(ROOT, "packages/plugin-spec")
const { NODE_OPTIONS: _runnerOptions, ...environment } = process.env

const run = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  spawnSync(command, args, { cwd, encoding: "utf8", env: environment })

const ok = (result: ReturnType<typeof run>, what: string) => {
  assert.strictEqual(result.status, 0, `${what}:\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

let work: string
let folder: string

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "tollgate-scaffold-"))
  const built = join(work, "spec-dist")
  ok(run(process.execPath, [join(SPEC, "scripts/build.mjs"), built], ROOT), "build")
  ok(run("npm", ["pack", "--pack-destination", work], built), "pack")
  const [tarball] = readdirSync(work).filter((name) => name.endsWith(".tgz"))
  const spec = join(work, "spec")
  mkdirSync(spec)
  ok(run("tar", ["-xzf", join(work, tarball as string), "-C", spec], work), "unpack")
  folder = join(work, "tollgate-plugin-moderation")
  ok(run(process.execPath, [join(spec, "package/scaffold/init.mjs"), "init", "moderation", folder], work), "init")
  // What `npm install` gives it: the spec from the tarball, its own effect; test-only packages linked for their types.
  mkdirSync(join(folder, "node_modules/@tollgate"), { recursive: true })
  cpSync(join(spec, "package"), join(folder, "node_modules/@tollgate/plugin-spec"), { recursive: true })
  for (const name of ["effect", "@types/node", "undici-types"]) {
    cpSync(join(ROOT, "node_modules", name), join(folder, "node_modules", name), { recursive: true, dereference: true })
  }
  for (const name of ["vitest", "fast-check", "@vitest", "pure-rand", "chai", "@types/chai", "@types/deep-eql"]) {
    const source = join(ROOT, "node_modules", name)
    if (existsSync(source) && !existsSync(join(folder, "node_modules", name))) {
      mkdirSync(dirname(join(folder, "node_modules", name)), { recursive: true })
      symlinkSync(source, join(folder, "node_modules", name))
    }
  }
}, 120_000)

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true })
})

describe("the plugin scaffold", () => {
  it("writes a package, its plugin, a fake vendor, its contract test and a config snippet", () => {
    assert.includeMembers(readdirSync(folder), [
      "package.json",
      "tsconfig.json",
      "index.ts",
      "vendor.ts",
      "contract.test.ts",
      "tollgate.yaml",
      "README.md"
    ])
  })

  it("type-checks with plain tsc (strict, lib ES2022) against the packed spec", () => {
    const tsc = join(dirname(createRequire(join(ROOT, "package.json")).resolve("typescript/package.json")), "bin/tsc")
    ok(run(process.execPath, [tsc, "-p", join(folder, "tsconfig.json")], folder), "tsc")
  })

  it("writes a chat plugin (init chat) that type-checks the same way", () => {
    // Inside the moderation plugin's folder, so it resolves the same installed packages (its suite and the gateway
    // loading it are ScaffoldedPlugins.test.ts's).
    const chat = join(folder, "chat")
    ok(run(process.execPath, [join(work, "spec/package/scaffold/init.mjs"), "init", "chat", chat], work), "init chat")
    assert.includeMembers(readdirSync(chat), ["index.ts", "vendor.ts", "contract.test.ts", "tollgate.yaml"])
    const tsc = join(dirname(createRequire(join(ROOT, "package.json")).resolve("typescript/package.json")), "bin/tsc")
    ok(run(process.execPath, [tsc, "-p", join(chat, "tsconfig.json")], chat), "tsc (chat)")
  })

  it("passes the spec's contract checks against its fake vendor", async () => {
    const load = (path: string) => import(pathToFileURL(join(folder, path)).href)
    const { endpointContractChecks, fetchUpstreamHttp } = await load(
      "node_modules/@tollgate/plugin-spec/contract/index.js"
    )
    const fc = (await import("fast-check")).default
    const { default: plugin, inputTokens } = await load("index.ts")
    const { startVendor, VENDOR_KEY } = await load("vendor.ts")
    const vendor = await startVendor()
    const model = (id: string, upstreamModel = id) => ({
      id,
      upstreams: [
        {
          name: "vendor",
          protocol: "x",
          baseUrl: vendor.url,
          timeoutMs: 5_000,
          idleTimeoutMs: 5_000,
          maxConnections: 2
        }
      ],
      upstreamModel,
      pricing: { input: 100_000n },
      maxOutputTokens: 0
    })
    const tokens = { encoding: "words", count: (text: string) => text.split(/\s+/).filter((w) => w !== "").length }
    const checks = endpointContractChecks(plugin, {
      models: [model("moderation-1")],
      requests: [{ name: "one input", body: { model: "moderation-1", input: "is this fine" } }],
      invalidBodies: [{ model: "moderation-1" }],
      inputs: fc.record({ model: fc.constant("moderation-1"), input: fc.string({ minLength: 1 }) }),
      usageWithin: (request: unknown) =>
        fc.record({ inputTokens: fc.integer({ min: 0, max: inputTokens(request, tokens) }) }),
      failing: [
        { name: "refused", model: model("r", "refuse"), body: { model: "r", input: "x" }, reason: "invalid_request" }
      ],
      http: fetchUpstreamHttp({ keys: { vendor: VENDOR_KEY } }),
      tokens
    }) as ReadonlyArray<{ readonly name: string; readonly run: () => Promise<void> }>
    try {
      assert.isAtLeast(checks.length, 6)
      for (const check of checks) await check.run()
    } finally {
      await vendor.close()
    }
    assert.strictEqual(plugin.defaultModel, "moderation-1")
    assert.strictEqual(plugin.endpoint.path, "/v1/moderations")
  })

  it("refuses a built-in kind it cannot scaffold yet, saying so", () => {
    const result = run(
      process.execPath,
      [join(work, "spec/package/scaffold/init.mjs"), "init", "images", join(work, "x")],
      work
    )
    assert.strictEqual(result.status, 2)
    assert.include(result.stderr, "built-in kind")
  })
})
