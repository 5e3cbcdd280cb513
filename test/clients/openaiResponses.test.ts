/**
 * The official `openai` SDK's Responses API as people use it, against the real gateway on its built-in simulator, on
 * every default text model: `responses.create`, `responses.stream` (its accumulated snapshot and final response),
 * `responses.retrieve`, `responses.inputItems.list` (auto-paginated), `responses.delete`, a function-call round trip
 * and `responses.parse` with a JSON schema; every request charged exactly the price of the usage its response
 * carried, as the SDK read it (the gateway's own report: this checks that the ledger agrees with what the client was
 * told, not an independent count of the tokens).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import type { Expected } from "../http/chat/Billing.ts"
import {
  assertChargedAsSeen,
  billedFrom,
  type ClientGateway,
  closeClientGateway,
  startClientGateway,
  TEXT_MODELS
} from "./ClientGateway.ts"

let h: ClientGateway
beforeAll(async () => {
  h = await startClientGateway()
}, 60_000)
afterAll(() => closeClientGateway(h))

const client = (key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, fetch: h.fetch, maxRetries: 0 })

const billed = (model: string, usage: OpenAI.Responses.ResponseUsage | undefined): Expected =>
  billedFrom(model, { input: usage?.input_tokens ?? -1, output: usage?.output_tokens ?? -1 })

const weather: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "The current weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false
  },
  strict: true
}

describe.each(TEXT_MODELS)("openai SDK responses → %s", (model) => {
  it("create, retrieve, list input items, delete", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const created = await openai.responses.create({ model, instructions: "Be brief.", input: "Hello from the matrix" })
    assert.strictEqual(created.status, "completed")
    assert.match(created.output_text, /^Echo: Hello from the matrix/)
    const retrieved = await openai.responses.retrieve(created.id)
    assert.strictEqual(retrieved.id, created.id)
    assert.strictEqual(retrieved.output_text, created.output_text)
    const items: Array<OpenAI.Responses.ResponseItem> = []
    for await (const item of openai.responses.inputItems.list(created.id, { limit: 1 })) items.push(item)
    assert.strictEqual(items.length, 1)
    assert.strictEqual(items[0].type, "message")
    await openai.responses.delete(created.id)
    const gone = await openai.responses.retrieve(created.id).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.instanceOf(gone, OpenAI.NotFoundError)
    await assertChargedAsSeen(h, customer, [billed(model, created.usage)])
  })

  it("stream: events accumulate into the final response, which is stored", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const stream = openai.responses.stream({ model, input: "Hello from the matrix" })
    let deltas = ""
    for await (const event of stream) if (event.type === "response.output_text.delta") deltas += event.delta
    const final = await stream.finalResponse()
    assert.strictEqual(final.output_text, deltas)
    assert.strictEqual((await openai.responses.retrieve(final.id)).output_text, deltas)
    await assertChargedAsSeen(h, customer, [billed(model, final.usage)])
  })

  it("a function-call round trip through previous_response_id, and parse with a JSON schema", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const first = await openai.responses.create({
      model,
      input: "What is the weather in Paris? Use the get_weather tool.",
      tools: [weather]
    })
    const call = first.output.find((item) => item.type === "function_call")
    assert.strictEqual(call?.name, "get_weather")
    const second = await openai.responses.create({
      model,
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call?.call_id ?? "", output: '{"temperature":21}' }],
      tools: [weather]
    })
    assert.include(second.output_text, "21")
    const parsed = await openai.responses.parse({
      model,
      input: "Describe the weather in Paris as JSON.",
      text: {
        format: {
          type: "json_schema",
          name: "weather",
          strict: true,
          schema: {
            type: "object",
            properties: { city: { type: "string" }, temperature: { type: "number" } },
            required: ["city", "temperature"],
            additionalProperties: false
          }
        }
      }
    })
    const object = parsed.output_parsed as { city: unknown; temperature: unknown }
    assert.isString(object.city)
    assert.isNumber(object.temperature)
    await assertChargedAsSeen(h, customer, [
      billed(model, first.usage),
      billed(model, second.usage),
      billed(model, parsed.usage)
    ])
  })
})
