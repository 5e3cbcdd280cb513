/**
 * An error quotes a client's bad value at most ~100 characters (src/domain/Quoted.ts): a 300 KB model name or format
 * does not come back whole in the 4xx that refuses it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { QUOTE_MAX } from "../../src/domain/Quoted.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"
import { type Admin, makeAdmin } from "./chat/ChatHarness.ts"

let gateway: TestGateway
let admin: Admin
let key: string
beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
  key = (await admin.customer({ deposit: "1" })).key
}, 60_000)
afterAll(() => gateway?.close())

const HUGE = "v".repeat(300_000)

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  return { status: response.status, text: await response.text() }
}

/** The message has the value's start, cut short: not the whole value, and no more of it than QUOTE_MAX. */
const assertClipped = (reply: { status: number; text: string }, status: number) => {
  assert.strictEqual(reply.status, status, reply.text.slice(0, 300))
  const message = (JSON.parse(reply.text) as { error: { message: string } }).error.message
  assert.include(message, "v".repeat(50))
  assert.notInclude(message, "v".repeat(QUOTE_MAX + 1))
  assert.isBelow(reply.text.length, 1_000)
}

describe("bad values quoted in errors", () => {
  it("a huge model name", async () => {
    assertClipped(await post("/v1/chat/completions", { model: HUGE, messages: [{ role: "user", content: "hi" }] }), 404)
  })

  it("a huge encoding_format", async () => {
    assertClipped(await post("/v1/embeddings", { model: "sim-embedding", input: "hi", encoding_format: HUGE }), 400)
  })
})
