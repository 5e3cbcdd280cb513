/**
 * The "done when", from a folder outside the repository: the packed spec's scaffold writes a chat plugin (a
 * made-up vendor with its own auth header and an NDJSON stream) and a moderation plugin, each in its own folder with
 * its own copy of `effect`; `npm test` in each runs its contract suite green; the gateway loads both from the
 * operator config alone (nothing under `src/` names them), and the official `openai` SDK's streamed and whole chats and
 * `moderations.create({ input })` (no model) are held, billed exactly and refunded when the vendor fails — the
 * vendor's own words never reaching the client.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawn, spawnSync } from "node:child_process"
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, relative, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { type LedgerEntry, makeAdmin } from "../../http/chat/ChatHarness.ts"
import { formatMicros, parseDecimal } from "../../../src/domain/Money.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"

const ROOT = resolve(import.meta.dirname, "../../..")
const SPEC = join(ROOT, "packages/plugin-spec")
/** The test runner's NODE_OPTIONS (a polyfill by relative path) mean nothing to a process in another folder. */
const { NODE_OPTIONS: _runnerOptions, ...environment } = process.env

/** USD per 1M tokens, as micro-dollars per 1M tokens. */
const INPUT = 2_000_000n
const OUTPUT = 6_000_000n
const MODERATION = 20_000_000n

const run = (command: string, args: ReadonlyArray<string>, cwd: string) => {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", env: environment })
  assert.strictEqual(result.status, 0, `${command} ${args.join(" ")} in ${cwd}:\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

/** `npm test` in a folder, started now and awaited later (it runs while the gateway starts): its status and output. */
const npmTest = (cwd: string) =>
  new Promise<{ readonly status: number | null; readonly output: string }>((done) => {
    const child = spawn("npm", ["test"], { cwd, env: environment })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    child.on("close", (status) => done({ status, output }))
  })

/**
 * What `npm install` gives a generated folder, offline: the spec from the tarball and its own copy of `effect`; the
 * test tools (vitest, fast-check, Node's types) linked from this checkout, as a cache would give them.
 */
const install = (folder: string, spec: string) => {
  mkdirSync(join(folder, "node_modules/@tollgate"), { recursive: true })
  cpSync(spec, join(folder, "node_modules/@tollgate/plugin-spec"), { recursive: true })
  cpSync(join(ROOT, "node_modules/effect"), join(folder, "node_modules/effect"), { recursive: true, dereference: true })
  const tools = [
    "vitest",
    "fast-check",
    "@vitest",
    "pure-rand",
    "chai",
    "@types/chai",
    "@types/deep-eql",
    "@types/node"
  ]
  for (const name of [...tools, "undici-types"]) {
    const target = join(folder, "node_modules", name)
    if (existsSync(join(ROOT, "node_modules", name)) && !existsSync(target)) {
      mkdirSync(dirname(target), { recursive: true })
      symlinkSync(join(ROOT, "node_modules", name), target)
    }
  }
  mkdirSync(join(folder, "node_modules/.bin"), { recursive: true })
  symlinkSync("../vitest/vitest.mjs", join(folder, "node_modules/.bin/vitest"))
}

interface Vendor {
  readonly url: string
  readonly close: () => Promise<void>
}

let work: string
let chatFolder: string
let moderationFolder: string
let acme: Vendor
let moderationVendor: Vendor
let gateway: TestGateway
let suites: Promise<ReadonlyArray<{ readonly status: number | null; readonly output: string }>>
let accountId: string
let apiKey: string

const admin = async (method: string, path: string, body?: unknown) => {
  const answer = await makeAdmin(gateway).call(method, path, body)
  assert.isTrue(answer.status >= 200 && answer.status < 300, `${method} ${path}: HTTP ${answer.status}`)
  return answer.body as Record<string, unknown>
}

/** The ledger entries of one request, once its hold is resolved (a stream settles just after its last byte). */
const ledgerOf = async (requestId: string | null | undefined): Promise<ReadonlyArray<LedgerEntry>> => {
  for (let attempt = 0; ; attempt++) {
    const entries = await makeAdmin(gateway).request(accountId, requestId)
    if (entries.some((entry) => entry.type !== "HoldPlaced") || attempt >= 40) return entries
    await new Promise((done) => setTimeout(done, 50))
  }
}

const available = async (): Promise<bigint> =>
  parseDecimal((await makeAdmin(gateway).balance(accountId)).available) as bigint

const perMillion = (tokens: number, price: bigint) => (BigInt(tokens) * price + 999_999n) / 1_000_000n

/** A reply that cost `cost`: held, charged exactly that, the rest of the hold given back, the balance down by it. */
const assertBilled = async (requestId: string | null | undefined, cost: bigint, before: bigint) => {
  const entries = await ledgerOf(requestId)
  assert.deepStrictEqual(
    entries.map((entry) => entry.type),
    ["HoldPlaced", "UsageRecalculated", "RefundIssued"]
  )
  const [hold, usage, refund] = entries as [LedgerEntry, LedgerEntry, LedgerEntry]
  assert.strictEqual(usage.data.cost, formatMicros(cost))
  const held = BigInt(Math.round(Number(hold.amount) * 1e6))
  assert.strictEqual(refund.amount, formatMicros(held - cost))
  assert.strictEqual(await available(), before - cost)
}

/** A failed call: held, then given back whole. */
const assertRefunded = async (requestId: string | null | undefined, before: bigint) => {
  const entries = await ledgerOf(requestId)
  assert.deepStrictEqual(
    entries.map((entry) => entry.type),
    ["HoldPlaced", "RefundIssued"]
  )
  assert.strictEqual(entries[1]?.amount, entries[0]?.amount)
  assert.strictEqual(await available(), before)
}

const openai = () => new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

/** The SDK's error for a call expected to fail, with the request id the gateway answered with. */
const failureOf = async (call: () => Promise<unknown>) => {
  const error = await call().then(
    () => assert.fail("the call answered"),
    (error: unknown) => error
  )
  assert.instanceOf(error, OpenAI.APIError)
  return error as InstanceType<typeof OpenAI.APIError> & { readonly error: { readonly code?: string } }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "tollgate-scaffolded-"))
  const built = join(work, "spec-dist")
  run(process.execPath, [join(SPEC, "scripts/build.mjs"), built], ROOT)
  run("npm", ["pack", "--pack-destination", work], built)
  const [tarball] = readdirSync(work).filter((name) => name.endsWith(".tgz"))
  mkdirSync(join(work, "spec"))
  run("tar", ["-xzf", join(work, tarball as string), "-C", join(work, "spec")], work)
  const init = join(work, "spec/package/scaffold/init.mjs")
  chatFolder = join(work, "tollgate-plugin-chat")
  moderationFolder = join(work, "tollgate-plugin-moderation")
  run(process.execPath, [init, "init", "chat"], work)
  run(process.execPath, [init, "init", "moderation"], work)
  for (const folder of [chatFolder, moderationFolder]) install(folder, join(work, "spec/package"))
  // Each generated folder's own `npm test`: its contract suite on its own `effect`.
  suites = Promise.all([npmTest(chatFolder), npmTest(moderationFolder)])

  const vendorOf = async (folder: string) =>
    (await import(pathToFileURL(join(folder, "vendor.ts")).href)) as {
      startVendor: () => Promise<Vendor>
      VENDOR_KEY: string
    }
  const acmeModule = await vendorOf(chatFolder)
  const moderationModule = await vendorOf(moderationFolder)
  acme = await acmeModule.startVendor()
  moderationVendor = await moderationModule.startVendor()
  // The operator's config: the generated snippets, with the vendors' addresses and keys and test prices.
  const chatSnippet = readFileSync(join(chatFolder, "tollgate.yaml"), "utf8")
  assert.include(chatSnippet, "auth: { header: x-acme-key }")
  const configPath = join(work, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  acme: { protocol: acme-ndjson, baseUrl: "${acme.url}", apiKey: "${acmeModule.VENDOR_KEY}", auth: { header: x-acme-key } }
  moderation-vendor: { protocol: moderation-vendor, baseUrl: "${moderationVendor.url}", apiKey: "${moderationModule.VENDOR_KEY}" }
models:
  - { id: acme-1, plugin: acme-chat, upstreams: [acme], pricing: { input: "2", output: "6" } }
  - { id: acme-broken, plugin: acme-chat, upstreamModel: broken, upstreams: [acme], pricing: { input: "2", output: "6" } }
  - { id: acme-cut, plugin: acme-chat, upstreamModel: cut, upstreams: [acme], pricing: { input: "2", output: "6" } }
  - { id: acme-refuse, plugin: acme-chat, upstreamModel: refuse, upstreams: [acme], pricing: { input: "2", output: "6" } }
  - { id: moderation-1, plugin: moderation, upstreams: [moderation-vendor], pricing: { input: "20" } }
plugins: ["./tollgate-plugin-chat/index.ts", "./tollgate-plugin-moderation/index.ts"]
`
  )
  gateway = await startTestGateway({ configPath })
  accountId = (await admin("POST", "/admin/accounts", { name: "scaffolded" })).id as string
  await admin("POST", `/admin/accounts/${accountId}/deposits`, { amount: "5", reference: "scaffolded-topup" })
  apiKey = (await admin("POST", `/admin/accounts/${accountId}/keys`, { name: "scaffolded" })).key as string
}, 120_000)

afterAll(async () => {
  await suites
  await gateway?.close()
  await acme?.close()
  await moderationVendor?.close()
  if (work !== undefined) rmSync(work, { recursive: true, force: true })
})

describe("scaffolded plugins, outside the repository, on their own effect", () => {
  it("are generated outside the checkout, each with its own copy of effect", () => {
    assert.isTrue(relative(ROOT, work).startsWith(".."), `${work} is inside ${ROOT}`)
    for (const folder of [chatFolder, moderationFolder]) {
      assert.notStrictEqual(
        realpathSync(join(folder, "node_modules/effect")),
        realpathSync(join(ROOT, "node_modules/effect"))
      )
    }
  })

  it("the chat and the moderation plugins pass their contract suites with `npm test`, as generated", async () => {
    for (const { status, output } of await suites) {
      assert.strictEqual(status, 0, output)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: vitest's colours
      const plain = output.replaceAll(/\u001b\[[0-9;]*m/g, "")
      assert.match(plain, /Tests\s+\d+ passed/)
      assert.notMatch(plain, /failed/)
    }
  }, 30_000)

  it("serve a streamed chat through Acme's NDJSON protocol: held, billed exactly from the vendor's usage", async () => {
    const before = await available()
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: "acme-1",
        messages: [{ role: "user", content: "say the sea is wide" }],
        max_tokens: 50,
        stream: true,
        stream_options: { include_usage: true }
      })
      .withResponse()
    let text = ""
    let usage: OpenAI.CompletionUsage | undefined | null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      usage = chunk.usage ?? usage
    }
    assert.strictEqual(text, "say the sea is wide")
    assert.strictEqual(usage?.prompt_tokens, 5)
    assert.strictEqual(usage?.completion_tokens, 5)
    await assertBilled(response.headers.get("x-request-id"), perMillion(5, INPUT) + perMillion(5, OUTPUT), before)
  })

  it("serve a whole chat the same way", async () => {
    const before = await available()
    const { data: completion, response } = await openai()
      .chat.completions.create({
        model: "acme-1",
        messages: [
          { role: "system", content: "repeat after me" },
          { role: "user", content: "one two three four" }
        ],
        max_tokens: 2
      })
      .withResponse()
    assert.strictEqual(completion.choices[0]?.message.content, "one two")
    assert.strictEqual(completion.choices[0]?.finish_reason, "length")
    assert.strictEqual(completion.model, "acme-1")
    await assertBilled(response.headers.get("x-request-id"), perMillion(7, INPUT) + perMillion(2, OUTPUT), before)
  })

  it("serve an Anthropic client too, the plugin's OpenAI-dialect events converted, billed the same", async () => {
    const before = await available()
    const anthropic = new Anthropic({ apiKey, baseURL: gateway.url, maxRetries: 0 })
    const { data: stream, response } = await anthropic.messages
      .create({
        model: "acme-1",
        max_tokens: 50,
        messages: [{ role: "user", content: "the sea is wide" }],
        stream: true
      })
      .withResponse()
    let text = ""
    let outputTokens = 0
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text
      if (event.type === "message_delta") outputTokens = event.usage.output_tokens
    }
    assert.strictEqual(text, "the sea is wide")
    assert.strictEqual(outputTokens, 4)
    await assertBilled(response.headers.get("x-request-id"), perMillion(4, INPUT) + perMillion(4, OUTPUT), before)
  })

  it("refund the hold when the vendor fails, whole or streamed, and never show the vendor's words", async () => {
    for (const stream of [false, true]) {
      const before = await available()
      const error = await failureOf(() =>
        openai().chat.completions.create({ model: "acme-broken", messages: [{ role: "user", content: "hi" }], stream })
      )
      assert.strictEqual(error.status, 502)
      assert.strictEqual(error.message, "502 the upstream failed (HTTP 500)")
      assert.strictEqual(error.error.code, "upstream_error")
      assert.notInclude(JSON.stringify(error.error), "shard 7")
      await assertRefunded(error.headers?.get("x-request-id"), before)
    }
  })

  it("end a stream the vendor cuts with the gateway's words, billing only what was delivered", async () => {
    const before = await available()
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: "acme-cut",
        messages: [{ role: "user", content: "one two three" }],
        max_tokens: 50,
        stream: true
      })
      .withResponse()
    let text = ""
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    })().then(
      () => assert.fail("the stream ended without an error"),
      (error: unknown) => error as Error
    )
    assert.strictEqual(text, "one two three", "what the vendor sent before it failed reached the client")
    assert.include(error.message, "the upstream stream failed before it finished")
    assert.notInclude(error.message, "lost the GPU")
    const entries = await ledgerOf(response.headers.get("x-request-id"))
    assert.deepStrictEqual(
      entries.map((entry) => entry.type),
      ["HoldPlaced", "UsageRecalculated", "RefundIssued"]
    )
    const cost = BigInt(Math.round(Number(entries[1]?.data.cost) * 1e6))
    assert.isTrue(cost > 0n, "the delivered text is billed")
    assert.strictEqual(await available(), before - cost)
  })

  it("answer the vendor's refusal of the request in the gateway's words, with a stable code, and refund it", async () => {
    const before = await available()
    const error = await failureOf(() =>
      openai().chat.completions.create({ model: "acme-refuse", messages: [{ role: "user", content: "hi" }] })
    )
    assert.strictEqual(error.status, 400)
    assert.strictEqual(error.message, "400 the upstream rejected the request (HTTP 400)")
    assert.strictEqual(error.error.code, "upstream_rejected")
    assert.notInclude(JSON.stringify(error.error), "rule 7")
    await assertRefunded(error.headers?.get("x-request-id"), before)
  })

  it("keep the plugin's own refusal (made before its vendor is asked) in its words, holding nothing", async () => {
    const before = await available()
    const error = await failureOf(() =>
      openai().chat.completions.create({
        model: "acme-1",
        messages: [{ role: "user", content: "hi" }],
        tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }]
      })
    )
    assert.strictEqual(error.status, 400)
    assert.include(error.message, "Acme models take no tools")
    assert.strictEqual(error.error.code, "invalid_request")
    assert.strictEqual(await available(), before)
  })

  it("serve openai.moderations.create({ input }) without a model, billed per input token", async () => {
    const before = await available()
    const { data: moderation, response } = await openai().moderations.create({ input: "is this fine" }).withResponse()
    assert.strictEqual(moderation.model, "moderation-1")
    assert.lengthOf(moderation.results, 1)
    await assertBilledWhole(
      response.headers.get("x-request-id"),
      perMillion(countText("is this fine"), MODERATION),
      before
    )
  })
})

/** A call whose hold is exactly its cost (priced per input token, counted the same way before and after). */
const assertBilledWhole = async (requestId: string | null, cost: bigint, before: bigint) => {
  const entries = await ledgerOf(requestId)
  assert.deepStrictEqual(
    entries.map((entry) => entry.type),
    ["HoldPlaced", "UsageRecalculated"]
  )
  assert.strictEqual(entries[0]?.amount, formatMicros(cost))
  assert.strictEqual(entries[1]?.data.cost, formatMicros(cost))
  assert.strictEqual(await available(), before - cost)
}
