/**
 * Hosted tools over HTTP: on a model whose upstream does not run them, left out with the `x-tollgate-warning` header
 * (the answer otherwise as usual, billed as used), or — on a model whose operator set `hostedTools: refuse` — refused
 * by the gateway before anything is held, with its own code (`unsupported_tool`, never `upstream_rejected`) and the
 * field's path in `param`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { assertBilled } from "./Billing.ts"
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

const requests = [
  {
    path: "/v1/responses",
    body: (model: string) => ({ model, input: "Hello", tools: [{ type: "web_search" }] }),
    param: "tools.0"
  },
  {
    path: "/v1/chat/completions",
    body: (model: string) => ({ model, messages: [{ role: "user", content: "Hello" }], web_search_options: {} }),
    param: "web_search_options"
  }
] as const

describe("a hosted tool the model's upstream does not run", () => {
  it.each(requests)("$path: left out, the warning header says which, the call billed as usual", async (request) => {
    const customer = await h.admin.customer()
    const served = await post(customer, request.path, request.body("sim-anthropic"))
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
      { requestId: served.requestId, model: "sim-anthropic", outcome: { _tag: "Usage", tokens } }
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
})
