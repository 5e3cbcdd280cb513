/**
 * The spec's image rules on the default catalog (`npm start`'s), through the real gateway and its simulator: the
 * dedicated image model is charged for its output image tokens only, and a request to any image model that carries
 * `tools` is refused with a 400 before anything is held, on every endpoint that reaches an image model.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI, { toFile } from "openai"
import { formatMicros } from "../../../src/domain/Money.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, closeAfterReplay, type Customer, makeAdmin } from "../chat/ChatHarness.ts"
import { lastHold, makePng } from "./ImageHarness.ts"

let gateway: TestGateway
let admin: Admin
beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
}, 60_000)
afterAll(() => closeAfterReplay(gateway === undefined ? undefined : { admin, close: () => gateway.close() }))

/** imggen-2's default price: USD 40 per 1M output image tokens. */
const OUTPUT_PER_M = 40_000_000n

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

const outputOnly = (outputTokens: number) => formatMicros((BigInt(outputTokens) * OUTPUT_PER_M + 999_999n) / 1_000_000n)

const tool = { type: "function", function: { name: "search", parameters: { type: "object", properties: {} } } }

const post = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })

/** A 400 with nothing written to the account: no hold, no charge, the deposit untouched. */
const assertRefusedUnbilled = async (response: Response, customer: Customer) => {
  const text = await response.text()
  assert.strictEqual(response.status, 400, text.slice(0, 300))
  assert.match(text, /tools/)
  const entries = await admin.ledger(customer.accountId)
  assert.deepStrictEqual(
    entries.map((entry) => entry.type),
    ["AccountOpened", "FundsDeposited"],
    "nothing after the deposit"
  )
  const balance = await admin.balance(customer.accountId)
  assert.strictEqual(balance.available, "10.000000")
  assert.strictEqual(balance.held, "0.000000")
  return JSON.parse(text)
}

describe("imggen-2 on the default catalog is charged for output image tokens only", () => {
  it("a generation costs exactly output tokens × the output price", async () => {
    const customer = await admin.customer()
    const result = await client(customer.key).images.generate({
      model: "imggen-2",
      prompt: "a lighthouse at dusk with a long caption to count",
      size: "1024x1024",
      quality: "low"
    })
    assert.isAbove(result.usage?.input_tokens ?? 0, 0, "the upstream reported input tokens")
    const outcome = await lastHold(admin, customer, "imggen-2")
    assert.strictEqual(outcome.cost, outputOnly(result.usage?.output_tokens ?? -1))
  })

  it("an edit (input image and prompt) costs exactly output tokens × the output price", async () => {
    const customer = await admin.customer()
    const result = await client(customer.key).images.edit({
      model: "imggen-2",
      image: await toFile(makePng(256, 256), "in.png", { type: "image/png" }),
      prompt: "make it night",
      quality: "low"
    })
    assert.isAbove(result.usage?.input_tokens_details?.image_tokens ?? 0, 0, "the input image counted")
    const outcome = await lastHold(admin, customer, "imggen-2")
    assert.strictEqual(outcome.cost, outputOnly(result.usage?.output_tokens ?? -1))
  })
})

describe("a request to an image model that carries tools is refused before anything is held", () => {
  it("imggen-2 on /v1/images/generations", async () => {
    const customer = await admin.customer()
    const response = await post("/v1/images/generations", customer.key, {
      model: "imggen-2",
      prompt: "a cat",
      tools: [tool]
    })
    const body = await assertRefusedUnbilled(response, customer)
    assert.strictEqual(body.error.param, "tools")
    assert.strictEqual(body.error.code, "tools_not_supported")
    assert.strictEqual(body.error.type, "invalid_request_error")
  })

  it("imggen-2 on /v1/images/edits, as JSON and as multipart", async () => {
    const customer = await admin.customer()
    const png = `data:image/png;base64,${makePng(16, 16).toString("base64")}`
    const json = await post("/v1/images/edits", customer.key, {
      model: "imggen-2",
      prompt: "add snow",
      images: [{ image_url: png }],
      tools: [tool]
    })
    await assertRefusedUnbilled(json, customer)
    const form = new FormData()
    form.set("model", "imggen-2")
    form.set("prompt", "add snow")
    form.set("tools", JSON.stringify([tool]))
    form.set("image", new Blob([new Uint8Array(makePng(16, 16))], { type: "image/png" }), "in.png")
    const multipart = await fetch(`${gateway.url}/v1/images/edits`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}` },
      body: form
    })
    await assertRefusedUnbilled(multipart, customer)
  })

  it("a chat-style image model on /v1/chat/completions", async () => {
    const customer = await admin.customer()
    const response = await post("/v1/chat/completions", customer.key, {
      model: "imgchat-2.5-flash-image",
      messages: [{ role: "user", content: "Generate an image: a map" }],
      tools: [tool]
    })
    const body = await assertRefusedUnbilled(response, customer)
    assert.strictEqual(body.error.code, "tools_not_supported")
  })

  it("a chat-style image model on /v1/messages, in Anthropic's envelope", async () => {
    const customer = await admin.customer()
    const response = await post(
      "/v1/messages",
      customer.key,
      {
        model: "imgchat-3-pro-image-preview",
        max_tokens: 1024,
        messages: [{ role: "user", content: "Generate an image: a map" }],
        tools: [{ name: "search", input_schema: { type: "object", properties: {} } }]
      },
      { "anthropic-version": "2023-06-01" }
    )
    const body = await assertRefusedUnbilled(response, customer)
    assert.strictEqual(body.type, "error")
    assert.strictEqual(body.error.type, "invalid_request_error")
  })

  it("a chat-style image model on the native :generateContent path, in Google's envelope", async () => {
    const customer = await admin.customer()
    const response = await post("/v1beta/models/imgchat-2.5-flash-image:generateContent", customer.key, {
      contents: [{ role: "user", parts: [{ text: "Generate an image: a map" }] }],
      tools: [{ functionDeclarations: [{ name: "search" }] }]
    })
    const body = await assertRefusedUnbilled(response, customer)
    assert.strictEqual(body.error.status, "INVALID_ARGUMENT")
  })
})
