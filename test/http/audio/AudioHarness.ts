/**
 * Helpers for the audio suites: the real gateway on the default catalog (`sim-transcribe` at 0.0001 USD per audio
 * second, `sim-tts` at 15 USD per 1M characters), raw HTTP calls next to the SDK, and ledger outcomes per hold.
 */
import { assert } from "@effect/vitest"
import OpenAI from "openai"
import { formatMicros, parseDecimal } from "../../../src/domain/Money.ts"
import { type Admin, type Customer, makeAdmin } from "../chat/ChatHarness.ts"
import { holdsOf } from "../images/ImageHarness.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"

export { makeWav, probeAudio } from "../../adapters/simulator/audio/AudioHttp.ts"

// biome-ignore lint/suspicious/noExplicitAny: wire JSON is read field by field in assertions
export type Wire = any

export const TRANSCRIBE = "sim-transcribe"
export const TTS = "sim-tts"
/** Micro-dollars per audio second of `sim-transcribe`, and per 1M characters of `sim-tts`. */
export const TRANSCRIBE_PER_SECOND = 100n
export const TTS_PER_MILLION_CHARACTERS = 15_000_000n

export interface AudioHarness {
  readonly gateway: TestGateway
  readonly admin: Admin
  close(): Promise<void>
}

export const startAudioHarness = async (options: { readonly maxAudioBytes?: number } = {}): Promise<AudioHarness> => {
  const gateway = await startTestGateway(options)
  return { gateway, admin: makeAdmin(gateway), close: () => gateway.close() }
}

export const sdk = (h: AudioHarness, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, maxRetries: 0 })

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: Wire
}

const parsed = (text: string): Wire => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export const post = async (
  h: AudioHarness,
  path: string,
  key: string,
  body: BodyInit,
  headers: Record<string, string> = {}
): Promise<Answer> => {
  const response = await fetch(`${h.gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, ...headers },
    body,
    ...(body instanceof ReadableStream ? { duplex: "half" } : {})
  } as RequestInit)
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, body: parsed(text) }
}

export const postJson = (h: AudioHarness, path: string, key: string, body: unknown) =>
  post(h, path, key, JSON.stringify(body), { "content-type": "application/json" })

/** A multipart body with a `file` part (when given) and text fields; repeated names allowed. */
export const form = (
  file: { readonly bytes: Uint8Array; readonly name: string; readonly type?: string } | undefined,
  fields: ReadonlyArray<readonly [string, string]>
): FormData => {
  const data = new FormData()
  if (file !== undefined) {
    data.append("file", new Blob([Uint8Array.from(file.bytes)], { type: file.type ?? "audio/wav" }), file.name)
  }
  for (const [name, value] of fields) data.append(name, value)
  return data
}

export const secondsPrice = (millis: number): string =>
  formatMicros((BigInt(millis) * TRANSCRIBE_PER_SECOND + 999n) / 1000n)

export const charactersPrice = (characters: number): string =>
  formatMicros((BigInt(characters) * TTS_PER_MILLION_CHARACTERS + 999_999n) / 1_000_000n)

/** The account's holds: exactly `expected.length`, each for `model` on the customer's key, resolved as described. */
export const assertHolds = async (
  h: AudioHarness,
  customer: Customer,
  model: string,
  expected: ReadonlyArray<
    | { readonly _tag: "Charged"; readonly held: string; readonly cost: string }
    | { readonly _tag: "Released"; readonly held?: string; readonly reasons: ReadonlyArray<string> }
  >
) => {
  const holds = await holdsOf(h.admin, customer.accountId)
  assert.strictEqual(holds.length, expected.length, `holds: ${JSON.stringify(holds.map((o) => o.hold.amount))}`)
  holds.forEach((outcome, index) => {
    const want = expected[index]
    const label = `hold ${index}`
    assert.strictEqual(outcome.hold.model, model, label)
    assert.strictEqual(outcome.hold.keyId, customer.keyId, label)
    assert.match(outcome.hold.requestId ?? "", /^req_[0-9a-f]{32}$/, label)
    if (want?._tag === "Charged") {
      assert.strictEqual(outcome.held, want.held, `${label}: held`)
      assert.strictEqual(outcome.cost, want.cost, `${label}: cost`)
      assert.strictEqual(outcome.captured, want.cost, `${label}: captured`)
      const rest = formatMicros((parseDecimal(want.held) as bigint) - (parseDecimal(want.cost) as bigint))
      assert.strictEqual(outcome.refund ?? "0.000000", rest, `${label}: the rest of the hold goes back`)
    } else if (want?._tag === "Released") {
      if (want.held !== undefined) assert.strictEqual(outcome.held, want.held, `${label}: held`)
      assert.isUndefined(outcome.cost, `${label}: nothing captured`)
      assert.strictEqual(outcome.refund, outcome.held, `${label}: the whole hold goes back`)
      assert.include(want.reasons, outcome.refundReason, label)
    }
  })
  return holds
}

export const assertNothingHeld = async (h: AudioHarness, customer: Customer) => {
  const entries = await h.admin.ledger(customer.accountId)
  assert.deepStrictEqual(
    entries.filter((e) => e.type === "HoldPlaced").map((e) => e.amount),
    [],
    "nothing was held"
  )
}

export type { Customer }
