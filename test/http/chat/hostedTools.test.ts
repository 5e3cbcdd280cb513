/**
 * Hosted tools over HTTP: on a model whose upstream does not run them, left out with the `x-tollgate-warning` header
 * (the answer otherwise as usual, billed as used), or — on a model whose operator set `hostedTools: refuse` — refused
 * by the gateway before anything is held, with its own code (`unsupported_tool`, never `upstream_rejected`) and the
 * field's path in `param`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { formatMicros, parseDecimal } from "../../../src/domain/Money.ts"
import { readFrames } from "../../plugins/text/convert/helpers.ts"
import { assertOpenAiSchema } from "../../support/OpenAiSchema.ts"
import { assertBilled, priceOf, settledLedger } from "./Billing.ts"
import { type ChatHarness, closeAfterReplay, type Customer, startChatHarness } from "./ChatHarness.ts"

let h: ChatHarness
beforeAll(async () => {
  h = await startChatHarness()
}, 60_000)
afterAll(() => closeAfterReplay(h))

const post = async (customer: Customer, path: string, body: unknown) => {
  const response = await fetch(`${h.gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  return {
    status: response.status,
    warning: response.headers.get("x-tollgate-warning") ?? undefined,
    requestId: response.headers.get("x-request-id") ?? undefined,
    json: () => JSON.parse(text) as Record<string, Record<string, unknown>>,
    text
  }
}

const parameters = { type: "object", properties: {} }

/** Each asks for a web search beside a function tool: what Gemini models before Gemini 3 refuse to combine. */
const requests = [
  {
    path: "/v1/responses",
    body: (model: string) => ({
      model,
      input: "Hello",
      tools: [{ type: "web_search" }, { type: "function", name: "clock", parameters }]
    }),
    param: "tools.0"
  },
  {
    path: "/v1/chat/completions",
    body: (model: string) => ({
      model,
      messages: [{ role: "user", content: "Hello" }],
      tools: [{ type: "function", function: { name: "clock", parameters } }],
      web_search_options: {}
    }),
    param: "web_search_options"
  }
] as const

describe("a hosted web search beside function tools on a Gemini model", () => {
  it.each(requests)("$path: left out, the warning header says which, the call billed as usual", async (request) => {
    const customer = await h.admin.customer()
    const served = await post(customer, request.path, request.body("sim-gemini"))
    assert.strictEqual(served.status, 200, served.text)
    assert.strictEqual(
      served.warning,
      `${request.param}: the hosted tool 'web_search' was left out (this model's upstream does not run it)`
    )
    const usage = served.json().usage as Record<string, number>
    const tokens = {
      input: usage.input_tokens ?? usage.prompt_tokens,
      output: usage.output_tokens ?? usage.completion_tokens
    }
    await assertBilled(h.admin, customer, [
      { requestId: served.requestId, model: "sim-gemini", outcome: { _tag: "Usage", tokens } }
    ])
  })

  it.each(requests)("$path: refused when the operator says so, by the gateway, naming the field", async (request) => {
    const customer = await h.admin.customer()
    const refused = await post(customer, request.path, request.body("hosted-refused"))
    assert.strictEqual(refused.status, 400, refused.text)
    assert.strictEqual(refused.json().error.code, "unsupported_tool")
    assert.strictEqual(refused.json().error.param, request.param)
    assert.isUndefined(refused.warning)
    await assertBilled(h.admin, customer, [])
  })

  it("without the function tool, the search is Gemini's to run: served even on a model set to refuse", async () => {
    const customer = await h.admin.customer()
    const served = await post(customer, "/v1/responses", {
      model: "hosted-refused",
      input: "Hello",
      tools: [{ type: "web_search" }]
    })
    assert.strictEqual(served.status, 200, served.text)
    assert.isUndefined(served.warning)
  })
})

describe.each(["sim-anthropic", "sim-gemini"])("chat completions' web_search_options on %s", (model) => {
  it("runs as the vendor's search: no warning, the search billed at webSearch", async () => {
    const customer = await h.admin.customer()
    const served = await post(customer, "/v1/chat/completions", {
      model,
      messages: [{ role: "user", content: "Please search the web for tollgate" }],
      web_search_options: {}
    })
    assert.strictEqual(served.status, 200, served.text)
    assert.isUndefined(served.warning)
    const usage = served.json().usage as Record<string, number>
    const entries = await settledLedger(h.admin, customer.accountId)
    const charged = entries.filter((e) => e.type === "UsageRecalculated")
    const tokens = parseDecimal(priceOf({ input: usage.prompt_tokens, output: usage.completion_tokens })) as bigint
    assert.strictEqual(charged[0]?.data.cost, formatMicros(tokens + 10_000n))
  })
})

describe.each(["sim-responses", "sim-anthropic", "sim-gemini"])("web_search on %s, run by the vendor", (model) => {
  const SEARCH = 10_000n // the harness's webSearch price: USD 0.01

  const request = (stream: boolean) => ({
    model,
    input: "Please search the web for tollgate",
    tools: [{ type: "web_search" }],
    stream
  })

  /** The one charge of the account: its tokens at the token prices plus one search, recorded with its usage. */
  const assertChargedOneSearch = async (customer: Customer, usage: Record<string, number>) => {
    const entries = await settledLedger(h.admin, customer.accountId)
    const charged = entries.filter((e) => e.type === "UsageRecalculated")
    assert.strictEqual(charged.length, 1)
    const tokens = priceOf({ input: usage.input_tokens, output: usage.output_tokens })
    assert.strictEqual(charged[0].data.cost, formatMicros((parseDecimal(tokens) as bigint) + SEARCH))
    assert.strictEqual((charged[0].data.usage as Record<string, number>).webSearches, 1)
    assert.strictEqual((await h.admin.balance(customer.accountId)).held, "0.000000")
  }

  it("JSON: its web_search_call with sources reaches the client, no warning, billed at webSearch", async () => {
    const customer = await h.admin.customer()
    const served = await post(customer, "/v1/responses", request(false))
    assert.strictEqual(served.status, 200, served.text)
    assert.isUndefined(served.warning)
    assertOpenAiSchema("Response", served.json())
    const output = served.json().output as unknown as ReadonlyArray<Record<string, Record<string, unknown>>>
    const search = output.find((item) => (item.type as unknown) === "web_search_call")
    assert.isDefined(search, served.text)
    assert.strictEqual(search?.action.type, "search")
    assert.isAbove(((search?.action.sources ?? []) as ReadonlyArray<unknown>).length, 0)
    await assertChargedOneSearch(customer, served.json().usage as Record<string, number>)
  })

  it("streamed: the search's events reach the client, billed at webSearch", async () => {
    const customer = await h.admin.customer()
    const served = await post(customer, "/v1/responses", request(true))
    assert.strictEqual(served.status, 200, served.text)
    const events = readFrames(served.text.split(/(?<=\n\n)/).filter((f) => f.trim() !== "")).map(
      (f) => f.data as Record<string, Record<string, unknown>>
    )
    for (const event of events) assertOpenAiSchema("ResponseStreamEvent", event)
    assert.isTrue(events.some((e) => (e.type as unknown) === "response.web_search_call.completed"))
    const completed = events.find((e) => (e.type as unknown) === "response.completed")
    await assertChargedOneSearch(customer, completed?.response.usage as Record<string, number>)
  })
})
