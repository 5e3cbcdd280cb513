/**
 * A plugin written outside this repository, as a third party would ship it: `@tollgate/plugin-spec` built and packed
 * (packages/plugin-spec/scripts/build.mjs, `npm pack`), installed from the tarball into a folder under the system's
 * temporary directory with its own `node_modules` and its own copy of `effect`, the plugin compiled there with plain
 * `tsc` (strict, `lib: ["ES2022"]`), then listed in the operator config and driven through the real gateway: held,
 * billed, refunded on failure — with no key handed to it and its failures read by their shape.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, relative, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { type LedgerEntry, makeAdmin } from "../../http/chat/ChatHarness.ts"
import { formatMicros } from "../../../src/domain/Money.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"

const ROOT = resolve(import.meta.dirname, "../../..")
const SPEC = join(ROOT, "packages/plugin-spec")
const VENDOR_KEY = "vendor-secret-key-31"
/** 0.0015 USD per item, in micro-dollars. */
const PER_ITEM = 1_500n

/** The test runner's NODE_OPTIONS (a polyfill by relative path) mean nothing to a process in another folder. */
const { NODE_OPTIONS: _runnerOptions, ...environment } = process.env

const run = (command: string, args: ReadonlyArray<string>, cwd: string) => {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", env: environment })
  assert.strictEqual(result.status, 0, `${command} ${args.join(" ")} in ${cwd}:\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

/** The repository's `tsc` (a plugin author has their own; any TypeScript that reads the declarations will do). */
const tscPath = () => {
  const manifest = createRequire(join(ROOT, "package.json")).resolve("typescript/package.json")
  return join(dirname(manifest), "bin/tsc")
}

/** The vendor: `POST /v1/score` with the gateway's bearer key; model `broken` answers 500 with text of its own. */
interface Vendor {
  readonly url: string
  readonly authorizations: Array<string | undefined>
  readonly server: Server
}

const startVendor = async (): Promise<Vendor> => {
  const authorizations: Array<string | undefined> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      authorizations.push(request.headers.authorization)
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; input: Array<string> }
      if (request.headers.authorization !== `Bearer ${VENDOR_KEY}`) {
        response.writeHead(401, { "content-type": "application/json" }).end('{"error":{"message":"bad key"}}')
      } else if (body.model === "broken") {
        response
          .writeHead(500, { "content-type": "application/json" })
          .end('{"error":{"message":"vendor internal error: shard 7 on fire"}}')
      } else {
        response
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ scores: body.input.map((text) => text.length / 100) }))
      }
    })
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, authorizations, server }
}

let folder: string
let vendor: Vendor
let gateway: TestGateway
let accountId: string
let apiKey: string
let brokenOnlyKey: string

const admin = async (method: string, path: string, body?: unknown) => {
  const answer = await makeAdmin(gateway).call(method, path, body)
  assert.isTrue(answer.status >= 200 && answer.status < 300, `${method} ${path}: HTTP ${answer.status}`)
  return answer.body as Record<string, unknown>
}

const score = (body: unknown, key = apiKey) =>
  fetch(`${gateway.url}/v1/scores`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body)
  })

const ledgerOf = (requestId: string | null): Promise<ReadonlyArray<LedgerEntry>> =>
  makeAdmin(gateway).request(accountId, requestId)

const available = async (): Promise<string> => (await makeAdmin(gateway).balance(accountId)).available

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "tollgate-external-plugin-"))
  // The spec, built and packed as it is published, installed from the tarball alone (its peers are the folder's).
  const built = join(folder, "spec-dist")
  run(process.execPath, [join(SPEC, "scripts/build.mjs"), built], ROOT)
  run("npm", ["pack", "--pack-destination", folder], built)
  const [tarball] = readdirSync(folder).filter((name) => name.endsWith(".tgz"))
  writeFileSync(join(folder, "package.json"), JSON.stringify({ name: "score-plugin", private: true, type: "module" }))
  run(
    "npm",
    ["install", "--offline", "--legacy-peer-deps", "--no-audit", "--no-fund", "--ignore-scripts", `./${tarball}`],
    folder
  )
  // Its own `effect` (a copy, as `npm install effect` would give it) and Node's types, from this checkout's cache.
  for (const name of ["effect", "@types/node", "undici-types"]) {
    cpSync(join(ROOT, "node_modules", name), join(folder, "node_modules", name), { recursive: true, dereference: true })
  }
  mkdirSync(join(folder, "src"))
  cpSync(join(import.meta.dirname, "external/index.ts"), join(folder, "src/index.ts"))
  writeFileSync(
    join(folder, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2022"],
        types: ["node"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        // effect's own declarations name Web Crypto types (CryptoKey) that lib ES2022 and @types/node lack.
        skipLibCheck: true,
        outDir: "dist",
        rootDir: "src"
      },
      include: ["src"]
    })
  )
  run(process.execPath, [tscPath(), "-p", join(folder, "tsconfig.json")], folder)
  // The spec's declarations themselves are checked too: every error of a full check is in effect's own files.
  const full = spawnSync(
    process.execPath,
    [tscPath(), "-p", join(folder, "tsconfig.json"), "--noEmit", "--skipLibCheck", "false"],
    { cwd: folder, encoding: "utf8", env: environment }
  )
  const foreign = full.stdout
    .split("\n")
    .filter((line) => /error TS/.test(line) && !line.startsWith("node_modules/effect/"))
  assert.deepStrictEqual(foreign, [], "errors outside effect's own declarations")

  vendor = await startVendor()
  const configPath = join(folder, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  scorer: { protocol: openai, baseUrl: "${vendor.url}", apiKey: "${VENDOR_KEY}" }
models:
  - { id: score-1, plugin: score, upstreams: [scorer], pricing: { perItem: "0.0015" } }
  - { id: score-broken, plugin: score, upstreamModel: broken, upstreams: [scorer], pricing: { perItem: "0.0015" } }
plugins: ["${join(folder, "dist/index.js")}"]
`
  )
  gateway = await startTestGateway({ configPath })
  accountId = (await admin("POST", "/admin/accounts", { name: "score-customer" })).id as string
  await admin("POST", `/admin/accounts/${accountId}/deposits`, { amount: "5", reference: "score-topup" })
  apiKey = (await admin("POST", `/admin/accounts/${accountId}/keys`, { name: "score" })).key as string
  brokenOnlyKey = (await admin("POST", `/admin/accounts/${accountId}/keys`, { name: "b", models: ["score-broken"] }))
    .key as string
}, 180_000)

afterAll(async () => {
  await gateway?.close()
  if (vendor !== undefined) await new Promise((closed) => vendor.server.close(closed))
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true })
})

describe("a plugin installed outside the repository, with its own effect", () => {
  it("lives outside the checkout, on its own copy of effect", () => {
    assert.isTrue(relative(ROOT, folder).startsWith(".."), `${folder} is inside ${ROOT}`)
    assert.notStrictEqual(
      realpathSync(join(folder, "node_modules/effect")),
      realpathSync(join(ROOT, "node_modules/effect"))
    )
  })

  it("is served through the gateway: held, billed exactly, the key added by the gateway and never shown to it", async () => {
    const before = await available()
    const response = await score({ model: "score-1", input: ["alpha", "beta", "gamma"] })
    assert.strictEqual(response.status, 200)
    const body = (await response.json()) as {
      data: ReadonlyArray<{ index: number; score: number }>
      usage: { items: number }
      plugin: { effect: string; upstreamFields: ReadonlyArray<string> }
    }
    assert.deepStrictEqual(
      body.data.map((entry) => entry.score),
      [0.05, 0.04, 0.05]
    )
    assert.strictEqual(
      body.plugin.effect,
      pathToFileURL(join(realpathSync(folder), "node_modules/effect/dist/index.js")).href
    )
    assert.deepStrictEqual(body.plugin.upstreamFields, [
      "baseUrl",
      "idleTimeoutMs",
      "maxConnections",
      "name",
      "protocol",
      "timeoutMs"
    ])
    assert.strictEqual(vendor.authorizations.at(-1), `Bearer ${VENDOR_KEY}`)

    const entries = await ledgerOf(response.headers.get("x-request-id"))
    assert.deepStrictEqual(
      entries.map((entry) => entry.type),
      ["HoldPlaced", "UsageRecalculated"]
    )
    assert.strictEqual(entries[0]?.amount, formatMicros(3n * PER_ITEM))
    assert.strictEqual(entries[1]?.data.cost, formatMicros(3n * PER_ITEM))
    assert.deepStrictEqual(entries[1]?.data.usage, { items: 3 })
    assert.strictEqual(await available(), formatMicros(BigInt(Math.round(Number(before) * 1e6)) - 3n * PER_ITEM))
  })

  it("serves a body without `model` with the plugin's default model, under the key's model list", async () => {
    const response = await score({ input: ["alpha", "beta"] })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(((await response.json()) as { model: string }).model, "score-1")
    const entries = await ledgerOf(response.headers.get("x-request-id"))
    assert.strictEqual(entries[0]?.amount, formatMicros(2n * PER_ITEM))
    const refused = await score({ input: ["alpha"] }, brokenOnlyKey)
    assert.strictEqual(refused.status, 403)
    assert.strictEqual(((await refused.json()) as { error: { code: string } }).error.code, "model_not_allowed")
  })

  it("refunds the whole hold when the vendor fails, and the client never sees the vendor's text", async () => {
    const before = await available()
    const response = await score({ model: "score-broken", input: ["alpha"] })
    assert.strictEqual(response.status, 502)
    const text = await response.text()
    assert.notInclude(text, "shard 7")
    const error = (JSON.parse(text) as { error: { message: string; code: string } }).error
    assert.strictEqual(error.code, "upstream_error")
    assert.strictEqual(error.message, "the upstream failed (HTTP 500)")
    const entries = await ledgerOf(response.headers.get("x-request-id"))
    assert.deepStrictEqual(
      entries.map((entry) => entry.type),
      ["HoldPlaced", "RefundIssued"]
    )
    assert.strictEqual(entries[1]?.amount, entries[0]?.amount)
    assert.strictEqual(await available(), before)
  })

  it("reads a failure made by the plugin's own effect (a class of its copy) by its shape", async () => {
    const before = await available()
    const response = await score({ model: "score-1", input: ["refuse-me"] })
    assert.strictEqual(response.status, 400)
    const error = ((await response.json()) as { error: { message: string; code: string; param: string } }).error
    assert.deepStrictEqual(
      [error.message, error.code, error.param],
      ["this plugin refuses the input 'refuse-me'", "refused_input", "input"]
    )
    assert.strictEqual(await available(), before)
  })

  it("runs against the vendor outside the gateway with the packed spec's fetchUpstreamHttp and its own effect", async () => {
    const load = (path: string) => import(pathToFileURL(join(folder, path)).href)
    const { fetchUpstreamHttp } = await load("node_modules/@tollgate/plugin-spec/contract/fetchUpstreamHttp.js")
    const { Effect } = await load("node_modules/effect/dist/index.js")
    const plugin = (await load("dist/index.js")).default
    const upstream = {
      name: "scorer",
      protocol: "openai",
      baseUrl: vendor.url,
      timeoutMs: 5_000,
      idleTimeoutMs: 5_000,
      maxConnections: 1
    }
    const reply = await Effect.runPromise(
      plugin.invoke({
        model: {
          id: "score-1",
          upstreams: [upstream],
          upstreamModel: "score-1",
          pricing: { perItem: PER_ITEM },
          maxOutputTokens: 0
        },
        request: { model: "score-1", input: ["abc"] },
        requestId: "outside",
        signal: new AbortController().signal,
        http: fetchUpstreamHttp({ keys: { scorer: VENDOR_KEY } })
      })
    )
    assert.deepStrictEqual(reply.usage, { items: 1 })
  })
})
