/**
 * A gateway for the image tests: the real server on PGlite with the three image models (and one text model) pointed at
 * a simulator this test controls, so a test can read what crossed the wire upstream. Plus helpers: PNG decoding,
 * ledger reading per request, and small input images.
 */
import { assert } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PNG } from "pngjs"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, type LedgerEntry, makeAdmin } from "../chat/ChatHarness.ts"

/** Wire JSON as the tests read it: loosely, any field at any depth. */
// biome-ignore lint/suspicious/noExplicitAny: one alias for reading arbitrary wire JSON in assertions
export type Wire = any

/** USD per call of the chat-style models, and per 1M tokens of the dedicated one. */
export const FLASH_PER_CALL = "0.039000"
export const PRO_PER_CALL = "0.134000"
export const IMGGEN_OUTPUT_PER_M = 40_000_000n
export const IMGGEN_INPUT_PER_M = 5_000_000n

export interface ImageHarness {
  readonly gateway: TestGateway
  readonly sim: RunningSimulator
  readonly admin: Admin
  close(): Promise<void>
}

const configYaml = (sim: string): string => `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-gemini: { protocol: gemini, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: imgchat-2.5-flash-image, plugin: chat-image, upstreams: [sim-gemini], upstreamModel: gemini-2.5-flash-image, pricing: { perCall: "0.039" } }
  - { id: imgchat-3-pro-image-preview, plugin: chat-image, upstreams: [sim-gemini], upstreamModel: gemini-3-pro-image-preview, pricing: { perCall: "0.134" } }
  - { id: imggen-2, plugin: dedicated-image, upstreams: [sim-openai], upstreamModel: gpt-image-2, pricing: { input: "5", output: "40" } }
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
`

const startGateway = (configPath: string, allowHosts: ReadonlyArray<string>): Promise<TestGateway> =>
  startTestGateway({ configPath, fetchAllowHosts: allowHosts })

export const startImageHarness = async (
  options: { readonly allowHosts?: ReadonlyArray<string> } = {}
): Promise<ImageHarness> => {
  const sim = await startSimulator()
  const dir = mkdtempSync(join(tmpdir(), "tollgate-images-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, configYaml(sim.baseUrl))
  const gateway = await startGateway(configPath, options.allowHosts ?? [])
  return {
    gateway,
    sim,
    admin: makeAdmin(gateway),
    close: async () => {
      await gateway.close()
      await sim.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** Decodes a base64 PNG, failing the test when it is not one. */
export const decodePng = (base64: string): PNG => {
  const bytes = Buffer.from(base64, "base64")
  assert.deepStrictEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature")
  return PNG.sync.read(bytes)
}

/** A solid-colour PNG of the given size. */
export const makePng = (width: number, height: number): Buffer => {
  const png = new PNG({ width, height })
  for (let i = 0; i < width * height; i++) {
    png.data[i * 4] = 200
    png.data[i * 4 + 1] = (i * 7) % 256
    png.data[i * 4 + 2] = 40
    png.data[i * 4 + 3] = 255
  }
  return PNG.sync.write(png)
}

export const pngDataUri = (width: number, height: number): string =>
  `data:image/png;base64,${makePng(width, height).toString("base64")}`

/** A 1×1 GIF, a type the chat-style image models refuse. */
export const GIF_DATA_URI = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

/** The Markdown data-URI images of a chat reply, in order. */
export const markdownImages = (content: string): ReadonlyArray<{ mimeType: string; data: string }> =>
  [...content.matchAll(/!\[[^\]\n]*\]\(data:(image\/[a-z+.-]+);base64,([A-Za-z0-9+/=]+)\)/g)].map((m) => ({
    mimeType: m[1] ?? "",
    data: m[2] ?? ""
  }))

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The ledger once every hold is resolved. */
export const settledLedger = async (admin: Admin, accountId: string): Promise<ReadonlyArray<LedgerEntry>> => {
  for (let attempt = 0; ; attempt++) {
    const entries = await admin.ledger(accountId)
    const holds = entries.filter((e) => e.type === "HoldPlaced")
    const done = holds.every((hold) =>
      entries.some((e) => e.holdId === hold.holdId && (e.type === "RefundIssued" || e.type === "UsageRecalculated"))
    )
    if (done || attempt >= 60) return entries
    await sleep(50)
  }
}

export interface HoldOutcome {
  readonly hold: LedgerEntry
  readonly held: string
  readonly cost: string | undefined
  readonly captured: string | undefined
  readonly usage: Record<string, unknown> | undefined
  readonly refund: string | undefined
  readonly refundReason: string | undefined
}

/** Every hold of the account, oldest first, with how it was resolved. */
export const holdsOf = async (admin: Admin, accountId: string): Promise<ReadonlyArray<HoldOutcome>> => {
  const entries = await settledLedger(admin, accountId)
  return entries
    .filter((e) => e.type === "HoldPlaced")
    .map((hold) => {
      const after = entries.filter((e) => e.holdId === hold.holdId && e.type !== "HoldPlaced")
      const usage = after.find((e) => e.type === "UsageRecalculated")
      const refund = after.find((e) => e.type === "RefundIssued")
      return {
        hold,
        held: hold.amount ?? "",
        cost: usage === undefined ? undefined : String(usage.data.cost),
        captured: usage === undefined ? undefined : String(usage.data.captured),
        usage: usage?.data.usage as Record<string, unknown> | undefined,
        refund: refund?.amount ?? undefined,
        refundReason: refund === undefined ? undefined : String(refund.data.reason)
      }
    })
}

/** The last hold of the account; asserts key, model and request id are on it. */
export const lastHold = async (
  admin: Admin,
  customer: { readonly accountId: string; readonly keyId: string },
  model: string
): Promise<HoldOutcome> => {
  const holds = await holdsOf(admin, customer.accountId)
  const last = holds.at(-1)
  assert.isDefined(last, "a hold was placed")
  const outcome = last as HoldOutcome
  assert.strictEqual(outcome.hold.keyId, customer.keyId)
  assert.strictEqual(outcome.hold.model, model)
  assert.match(outcome.hold.requestId ?? "", /^req_[0-9a-f]{32}$/)
  return outcome
}

/** Asserts the hold was refunded whole and nothing captured. */
export const assertUnbilled = (outcome: HoldOutcome, reasons: ReadonlyArray<string>) => {
  assert.isUndefined(outcome.cost, "nothing captured")
  assert.strictEqual(outcome.refund, outcome.held, "the whole hold goes back")
  assert.include(reasons, outcome.refundReason)
}

/** The upstream calls the simulator received on `path`, newest last. */
export const upstreamCalls = (sim: RunningSimulator, path: RegExp) => sim.calls().filter((call) => path.test(call.path))

export type { Admin, LedgerEntry }
