/**
 * `/v1/responses` on the real gateway and its default catalog, over HTTP as a client sees it: every default text model
 * (one per upstream protocol: chat completions, Responses, messages, Gemini) answers in OpenAI's published shapes,
 * JSON and every streamed event; stored responses are read, listed, deleted and continued only by their own account;
 * `store: false` keeps nothing; each request is billed exactly the usage the client saw.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ClientGateway, closeClientGateway, startClientGateway, TEXT_MODELS } from "../../clients/ClientGateway.ts"
import { assertOpenAiSchema, skipWithoutOpenAiSpec } from "../../support/OpenAiSchema.ts"
import { assertBilled, type Expected } from "../chat/Billing.ts"
import type { Customer } from "../chat/ChatHarness.ts"
import type { Wire } from "../chat/Fixtures.ts"
import { readFrames } from "../../plugins/text/convert/helpers.ts"

let h: ClientGateway
beforeAll(async () => {
  h = await startClientGateway()
}, 60_000)
afterAll(() => closeClientGateway(h))

skipWithoutOpenAiSpec()

type Json = Record<string, Wire>

const call = async (customer: Customer, method: string, path: string, body?: unknown) => {
  const response = await h.fetch(`${h.gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return {
    status: response.status,
    requestId: response.headers.get("x-request-id") ?? undefined,
    contentType: response.headers.get("content-type") ?? "",
    warning: response.headers.get("x-tollgate-warning") ?? undefined,
    text,
    json: (): Json => JSON.parse(text) as Json
  }
}

/** The stream's events: OpenAI's own frames and nothing else (what it cost comes in HTTP trailers). */
const events = (text: string): ReadonlyArray<{ event: string | undefined; data: Json }> =>
  readFrames(text.split(/(?<=\n\n)/)).map((f) => ({
    event: f.event,
    data: f.data as Json
  }))

const tokensOf = (usage: Json) => ({ input: usage.input_tokens as number, output: usage.output_tokens as number })

const usage = (requestId: string | undefined, model: string, u: Json): Expected => ({
  requestId,
  model,
  outcome: { _tag: "Usage", tokens: tokensOf(u) }
})

describe("POST /v1/responses on every default text model", () => {
  for (const model of TEXT_MODELS) {
    it(`${model}: JSON, then retrieved, listed and deleted, billed as reported`, async () => {
      const customer = await h.admin.customer()
      const created = await call(customer, "POST", "/v1/responses", {
        model,
        instructions: "Be brief.",
        input: "Say hello",
        reasoning: { effort: "low", summary: "auto" },
        metadata: { ticket: "42" }
      })
      assert.strictEqual(created.status, 200, created.text)
      const response = created.json()
      assertOpenAiSchema("Response", response)
      assert.match(response.id, /^resp_/)
      assert.strictEqual(response.model, model)
      assert.strictEqual(response.status, "completed")
      assert.strictEqual(response.instructions, "Be brief.")
      assert.deepStrictEqual(response.metadata, { ticket: "42" })
      assert.isTrue(response.store)
      const message = response.output.find((item: Json) => item.type === "message")
      assert.match(message.content[0].text, /Say hello/)
      for (const item of response.output) assert.notProperty(item, "encrypted_content", "only with include")

      const retrieved = await call(customer, "GET", `/v1/responses/${response.id}`)
      assert.strictEqual(retrieved.status, 200)
      assert.deepStrictEqual(retrieved.json(), response)
      assertOpenAiSchema("Response", retrieved.json())

      const items = await call(customer, "GET", `/v1/responses/${response.id}/input_items?order=asc`)
      assert.strictEqual(items.status, 200)
      const list = items.json()
      assertOpenAiSchema("ResponseItemList", list)
      assert.strictEqual(list.data.length, 1)
      assert.strictEqual(list.data[0].role, "user")
      assert.deepStrictEqual(list.data[0].content, [{ type: "input_text", text: "Say hello" }])

      const deleted = await call(customer, "DELETE", `/v1/responses/${response.id}`)
      assert.deepStrictEqual(deleted.json(), { id: response.id, object: "response", deleted: true })
      assert.strictEqual((await call(customer, "GET", `/v1/responses/${response.id}`)).status, 404)
      await assertBilled(h.admin, customer, [usage(created.requestId, model, response.usage)])
    })

    it(`${model}: a stream of valid events ending in response.completed, stored as streamed`, async () => {
      const customer = await h.admin.customer()
      const streamed = await call(customer, "POST", "/v1/responses", {
        model,
        input: [{ role: "user", content: [{ type: "input_text", text: "Stream a greeting" }] }],
        reasoning: { effort: "low", summary: "auto" },
        stream: true
      })
      assert.strictEqual(streamed.status, 200, streamed.text)
      assert.match(streamed.contentType, /^text\/event-stream/)
      const all = events(streamed.text)
      all.forEach((e, index) => {
        assertOpenAiSchema("ResponseStreamEvent", e.data)
        assert.strictEqual(e.event, e.data.type)
        assert.strictEqual(e.data.sequence_number, index, "sequence numbers count from 0 without gaps")
      })
      const types = all.map((e) => e.data.type)
      assert.deepStrictEqual(types.slice(0, 2), ["response.created", "response.in_progress"])
      assert.strictEqual(types.at(-1), "response.completed")
      assert.include(types, "response.output_text.delta")
      const final = all.at(-1)?.data.response as Json
      const text = all
        .filter((e) => e.data.type === "response.output_text.delta")
        .map((e) => e.data.delta)
        .join("")
      const message = final.output.find((item: Json) => item.type === "message")
      assert.strictEqual(message.content[0].text, text, "the deltas add up to the final text")
      const stored = await call(customer, "GET", `/v1/responses/${final.id}`)
      assert.deepStrictEqual(stored.json(), final)

      // A function call and reasoning, streamed: every event still OpenAI's, the arguments adding up.
      const withTool = await call(customer, "POST", "/v1/responses", {
        model,
        input: "What is the weather in Paris? Use the get_weather tool.",
        tools: [
          {
            type: "function",
            name: "get_weather",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
            strict: false
          }
        ],
        reasoning: { effort: "low", summary: "auto" },
        include: ["reasoning.encrypted_content"],
        stream: true
      })
      const toolEvents = events(withTool.text)
      toolEvents.forEach((e, index) => {
        assertOpenAiSchema("ResponseStreamEvent", e.data)
        assert.strictEqual(e.data.sequence_number, index)
      })
      const toolFinal = toolEvents.at(-1)?.data.response as Json
      const fc = toolFinal.output.find((item: Json) => item.type === "function_call")
      const argumentDeltas = toolEvents
        .filter((e) => e.data.type === "response.function_call_arguments.delta")
        .map((e) => e.data.delta)
        .join("")
      assert.strictEqual(argumentDeltas, fc.arguments)
      assert.deepStrictEqual(JSON.parse(fc.arguments), { city: "Paris" })
      await assertBilled(h.admin, customer, [
        usage(streamed.requestId, model, final.usage),
        usage(withTool.requestId, model, toolFinal.usage)
      ])
    })
  }
})

describe("stored responses", () => {
  it("continue a conversation with previous_response_id, each turn billed as reported", async () => {
    const customer = await h.admin.customer()
    const first = await call(customer, "POST", "/v1/responses", { model: "sim-anthropic", input: "My name is Ada." })
    const firstBody = first.json()
    const second = await call(customer, "POST", "/v1/responses", {
      model: "sim-gemini",
      input: "What is my name?",
      previous_response_id: firstBody.id
    })
    assert.strictEqual(second.status, 200, second.text)
    const secondBody = second.json()
    assert.strictEqual(secondBody.previous_response_id, firstBody.id)
    assert.isAbove(secondBody.usage.input_tokens, firstBody.usage.input_tokens, "the history went to the model")
    const items = (await call(customer, "GET", `/v1/responses/${secondBody.id}/input_items`)).json()
    // Newest first: this turn's question, the first answer, the first question.
    assert.deepStrictEqual(
      items.data.map((item: Json) => item.type),
      ["message", "message", "message"]
    )
    assert.strictEqual(items.data[0].content[0].text, "What is my name?")
    assert.strictEqual(items.data[2].content[0].text, "My name is Ada.")
    const page = (await call(customer, "GET", `/v1/responses/${secondBody.id}/input_items?limit=1&order=asc`)).json()
    assert.isTrue(page.has_more)
    const next = (
      await call(customer, "GET", `/v1/responses/${secondBody.id}/input_items?limit=5&order=asc&after=${page.last_id}`)
    ).json()
    assert.strictEqual(next.data.length, 2)
    assert.isFalse(next.has_more)
    const counted = (
      await call(customer, "POST", "/v1/responses/input_tokens", {
        model: "sim-gemini",
        input: "Anything else?",
        previous_response_id: secondBody.id
      })
    ).json()
    assert.strictEqual(counted.object, "response.input_tokens")
    assert.isAbove(counted.input_tokens, 0)
    await assertBilled(h.admin, customer, [
      usage(first.requestId, "sim-anthropic", firstBody.usage),
      usage(second.requestId, "sim-gemini", secondBody.usage)
    ])
  })

  it("belong to the account that made them: another account gets 404 and cannot continue them", async () => {
    const owner = await h.admin.customer()
    const other = await h.admin.customer()
    const created = (await call(owner, "POST", "/v1/responses", { model: "sim-openai", input: "secret" })).json()
    for (const [method, path] of [
      ["GET", `/v1/responses/${created.id}`],
      ["DELETE", `/v1/responses/${created.id}`],
      ["GET", `/v1/responses/${created.id}/input_items`],
      ["POST", `/v1/responses/${created.id}/cancel`]
    ] as const) {
      const refused = await call(other, method, path)
      assert.strictEqual(refused.status, 404, `${method} ${path}`)
      assertOpenAiSchema("ErrorResponse", refused.json())
    }
    const continued = await call(other, "POST", "/v1/responses", {
      model: "sim-openai",
      input: "and?",
      previous_response_id: created.id
    })
    assert.strictEqual(continued.status, 400)
    assert.strictEqual(continued.json().error.param, "previous_response_id")
    await assertBilled(h.admin, other, [])
    assert.strictEqual((await call(owner, "GET", `/v1/responses/${created.id}`)).status, 200)
  })

  it("store: false keeps nothing", async () => {
    const customer = await h.admin.customer()
    const created = await call(customer, "POST", "/v1/responses", { model: "sim-openai", input: "x", store: false })
    const body = created.json()
    assert.isFalse(body.store)
    assert.strictEqual((await call(customer, "GET", `/v1/responses/${body.id}`)).status, 404)
    const continued = await call(customer, "POST", "/v1/responses", {
      model: "sim-openai",
      input: "y",
      previous_response_id: body.id
    })
    assert.strictEqual(continued.status, 400)
  })

  it("item_reference names a stored item; an unknown one is a 400", async () => {
    const customer = await h.admin.customer()
    const first = (
      await call(customer, "POST", "/v1/responses", { model: "sim-anthropic", input: "Remember 7." })
    ).json()
    const answer = first.output.find((item: Json) => item.type === "message")
    const second = await call(customer, "POST", "/v1/responses", {
      model: "sim-openai",
      input: [
        { role: "user", content: "Remember 7." },
        { type: "item_reference", id: answer.id },
        { role: "user", content: "Which number?" }
      ]
    })
    assert.strictEqual(second.status, 200, second.text)
    const missing = await call(customer, "POST", "/v1/responses", {
      model: "sim-openai",
      input: [{ type: "item_reference", id: "msg_nope" }]
    })
    assert.strictEqual(missing.status, 400)
    assert.strictEqual(missing.json().error.param, "input.0.id")
  })
})

describe("refusals, in OpenAI's envelope, with nothing charged", () => {
  const cases: ReadonlyArray<readonly [string, Json, string | null]> = [
    ["no input", { model: "sim-openai" }, "input"],
    ["no model", { input: "x" }, "model"],
    ["input of the wrong type", { model: "sim-openai", input: 3 }, "input"],
    ["stream not a boolean", { model: "sim-openai", input: "x", stream: "yes" }, "stream"],
    ["max_output_tokens too small", { model: "sim-openai", input: "x", max_output_tokens: 2 }, "max_output_tokens"],
    [
      "a function output without its call",
      { model: "sim-anthropic", input: [{ type: "function_call_output", call_id: "c1", output: "1" }] },
      "input.0"
    ],
    [
      "an unknown item type's fields",
      { model: "sim-anthropic", input: [{ role: "robot", content: "x" }] },
      "input.0.role"
    ],
    [
      "a previous response that does not exist",
      { model: "sim-openai", input: "x", previous_response_id: "resp_x" },
      "previous_response_id"
    ],
    ["conversations", { model: "sim-openai", input: "x", conversation: "conv_1" }, "conversation"]
  ]
  for (const [name, body, param] of cases) {
    it(`${name}: 400`, async () => {
      const customer = await h.admin.customer()
      const refused = await call(customer, "POST", "/v1/responses", body)
      assert.strictEqual(refused.status, 400, refused.text)
      assertOpenAiSchema("ErrorResponse", refused.json())
      assert.strictEqual(refused.json().error.param, param)
      await assertBilled(h.admin, customer, [])
    })
  }

  it("a hosted tool on a model whose upstream does not run it: left out, the answer says so, billed as used", async () => {
    // The default catalog sets no webSearch price: a search Anthropic or Gemini ran costs nothing more than its tokens.
    for (const model of ["sim-openai", "sim-anthropic", "sim-gemini"]) {
      const customer = await h.admin.customer()
      const served = await call(customer, "POST", "/v1/responses", {
        model,
        input: "search the web",
        tools: [
          { type: "web_search", external_web_access: false },
          { type: "code_interpreter", container: "c" }
        ]
      })
      assert.strictEqual(served.status, 200, served.text)
      assertOpenAiSchema("Response", served.json())
      // Anthropic and Gemini models run the web search as their vendor's own; nobody but OpenAI runs code_interpreter.
      const left = model === "sim-openai" ? ["tools.0: the hosted tool 'web_search' was left out"] : []
      assert.strictEqual(
        served.warning,
        [...left, "tools.1: the hosted tool 'code_interpreter' was left out"]
          .map((note) => `${note} (this model's upstream does not run it)`)
          .join("; ")
      )
      await assertBilled(h.admin, customer, [usage(served.requestId, model, served.json().usage as Json)])
    }
  })

  it("a hosted tool on an openai-responses upstream is the upstream's to run: no warning", async () => {
    const customer = await h.admin.customer()
    const served = await call(customer, "POST", "/v1/responses", {
      model: "sim-responses",
      input: "search the web",
      tools: [{ type: "web_search" }]
    })
    assert.strictEqual(served.status, 200, served.text)
    assert.isUndefined(served.warning)
  })

  it("an unknown model: 404; no key: 401", async () => {
    const customer = await h.admin.customer()
    const unknown = await call(customer, "POST", "/v1/responses", { model: "nope", input: "x" })
    assert.strictEqual(unknown.status, 404)
    const anonymous = await h.fetch(`${h.gateway.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-openai", input: "x" })
    })
    assert.strictEqual(anonymous.status, 401)
    assertOpenAiSchema("ErrorResponse", await anonymous.json())
  })
})

describe("background responses", () => {
  it("run after the reply, are polled to completion and billed once", async () => {
    const customer = await h.admin.customer()
    const queued = await call(customer, "POST", "/v1/responses", {
      model: "sim-anthropic",
      input: "later",
      background: true
    })
    assert.strictEqual(queued.status, 200, queued.text)
    const body = queued.json()
    assertOpenAiSchema("Response", body)
    assert.strictEqual(body.status, "queued")
    assert.isTrue(body.background)
    let polled: Json = body
    for (let i = 0; i < 200 && (polled.status === "queued" || polled.status === "in_progress"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25))
      polled = (await call(customer, "GET", `/v1/responses/${body.id}`)).json()
    }
    assert.strictEqual(polled.status, "completed")
    assertOpenAiSchema("Response", polled)
    await assertBilled(h.admin, customer, [usage(queued.requestId, "sim-anthropic", polled.usage)])
    const cancel = await call(customer, "POST", `/v1/responses/${body.id}/cancel`)
    assert.strictEqual(cancel.status, 400, "a finished response cannot be cancelled")
  })
})

describe("a conversation that changes vendor", () => {
  const weatherTool = {
    type: "function",
    name: "get_weather",
    description: "The current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    strict: false
  }

  it("tools and reasoning started on Anthropic, continued on Gemini and back, each turn billed exactly", async () => {
    const customer = await h.admin.customer()
    const settings = { tools: [weatherTool], reasoning: { effort: "low", summary: "auto" } }
    const first = await call(customer, "POST", "/v1/responses", {
      model: "sim-anthropic",
      input: "What is the weather in Paris? Use the get_weather tool.",
      include: ["reasoning.encrypted_content"],
      ...settings
    })
    assert.strictEqual(first.status, 200, first.text)
    const firstBody = first.json()
    const reasoning = firstBody.output.find((item: Json) => item.type === "reasoning")
    const functionCall = firstBody.output.find((item: Json) => item.type === "function_call")
    assert.isDefined(functionCall, JSON.stringify(firstBody.output))
    assert.strictEqual(functionCall.name, "get_weather")
    assert.deepStrictEqual(JSON.parse(functionCall.arguments), { city: "Paris" })
    // Anthropic's signature travels with the reasoning, marked as Anthropic's.
    assert.match(reasoning.encrypted_content, /^gw1\.anthropic\./)

    const second = await call(customer, "POST", "/v1/responses", {
      model: "sim-gemini",
      previous_response_id: firstBody.id,
      input: [{ type: "function_call_output", call_id: functionCall.call_id, output: '{"temperature":21}' }],
      ...settings
    })
    assert.strictEqual(second.status, 200, second.text)
    const secondBody = second.json()
    assertOpenAiSchema("Response", secondBody)
    const answer = secondBody.output.find((item: Json) => item.type === "message")
    assert.match(answer.content[0].text, /21/, "Gemini saw the tool result")

    // Back on Anthropic: the first turn's signed thinking goes back to Anthropic, which checks its signature.
    const third = await call(customer, "POST", "/v1/responses", {
      model: "sim-anthropic",
      previous_response_id: secondBody.id,
      input: "Thanks. And in Rome?",
      ...settings
    })
    assert.strictEqual(third.status, 200, third.text)
    const thirdBody = third.json()
    const items = (await call(customer, "GET", `/v1/responses/${thirdBody.id}/input_items?order=asc&limit=100`)).json()
    assert.deepStrictEqual(
      items.data.map((item: Json) => item.type),
      ["message", "reasoning", "function_call", "function_call_output", "reasoning", "message", "message"]
    )
    await assertBilled(h.admin, customer, [
      usage(first.requestId, "sim-anthropic", firstBody.usage),
      usage(second.requestId, "sim-gemini", secondBody.usage),
      usage(third.requestId, "sim-anthropic", thirdBody.usage)
    ])
  })
})
