/**
 * What clients see, and what the ledger records, when things go wrong: upstream errors before any output, fallback
 * to the next upstream, streams cut or abandoned mid-way, unknown or forbidden models, an empty balance; plus the
 * side endpoints (count_tokens, the model list).
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { countAnthropicMessages, countOpenAIChat } from "../../../src/adapters/tokenizer/ChatTally.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { assertBilled, type Expected } from "./Billing.ts"
import { type ChatHarness, closeAfterReplay, makeAdmin, SIM_MODELS, startChatHarness } from "./ChatHarness.ts"
import { assertEcho, HELLO, type Wire } from "./Fixtures.ts"

let h: ChatHarness
let catalog: TestGateway
beforeAll(async () => {
  ;[h, catalog] = await Promise.all([startChatHarness(), startTestGateway()])
}, 60_000)
afterAll(() => closeAfterReplay(h, catalog))

const openai = (key: string, url = h.gateway.url) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 })
const anthropic = (key: string, url = h.gateway.url) => new Anthropic({ apiKey: key, baseURL: url, maxRetries: 0 })
const google = (key: string) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.gateway.url } })

const caught = async <E>(promise: Promise<unknown>): Promise<E> => {
  try {
    await promise
  } catch (error) {
    return error as E
  }
  throw new Error("expected the call to fail")
}

const hello = [{ role: "user" as const, content: HELLO }]
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("upstream errors before any output", () => {
  const cases = [
    { status: 500, gateway: 502, openaiType: "server_error", anthropicType: "api_error", google: /INTERNAL/ },
    {
      status: 529,
      gateway: 503,
      openaiType: "service_unavailable_error",
      anthropicType: "overloaded_error",
      google: /UNAVAILABLE/
    },
    {
      status: 429,
      gateway: 429,
      openaiType: "rate_limit_error",
      anthropicType: "rate_limit_error",
      google: /RESOURCE_EXHAUSTED/
    }
  ] as const

  it.each(cases)("upstream $status → an error in each client's dialect, the hold released in full", async (c) => {
    const customer = await h.admin.customer()
    const expected: Array<Expected> = []
    for (const model of SIM_MODELS) {
      h.sim.setFaults({ status: c.status, ...(c.status === 429 ? { retryAfterSeconds: 2 } : {}) }, 1)
      const viaOpenAI = await caught<InstanceType<typeof OpenAI.APIError>>(
        openai(customer.key).chat.completions.create({ model, messages: hello })
      )
      assert.instanceOf(viaOpenAI, OpenAI.APIError)
      assert.strictEqual(viaOpenAI.status, c.gateway, `${model} via openai`)
      assert.strictEqual(viaOpenAI.type, c.openaiType)
      if (c.status === 429) {
        assert.strictEqual(viaOpenAI.code, "rate_limit_exceeded")
        assert.strictEqual(viaOpenAI.headers?.get("retry-after"), "2")
      }
      expected.push({ requestId: undefined, model, outcome: { _tag: "Released", reason: "failed" } })

      // The same failure on a streamed request: still before the first byte, so still a plain HTTP error.
      h.sim.setFaults({ status: c.status }, 1)
      const viaAnthropic = await caught<InstanceType<typeof Anthropic.APIError>>(
        anthropic(customer.key).messages.create({ model, max_tokens: 256, messages: hello, stream: true })
      )
      assert.instanceOf(viaAnthropic, Anthropic.APIError)
      assert.strictEqual(viaAnthropic.status, c.gateway, `${model} via anthropic`)
      assert.strictEqual((viaAnthropic.error as Wire)?.type, "error")
      assert.strictEqual((viaAnthropic.error as Wire)?.error?.type, c.anthropicType)
      expected.push({ requestId: undefined, model, outcome: { _tag: "Released", reason: "failed" } })
    }
    h.sim.setFaults({ status: c.status }, 1)
    const viaGoogle = await caught<{ status: number; message: string }>(
      google(customer.key).models.generateContent({ model: "sim-openai", contents: HELLO })
    )
    assert.strictEqual(viaGoogle.status, c.gateway)
    assert.match(viaGoogle.message, c.google)
    expected.push({ requestId: undefined, model: "sim-openai", outcome: { _tag: "Released", reason: "failed" } })
    await assertBilled(h.admin, customer, expected)
    const balance = await h.admin.balance(customer.accountId)
    assert.strictEqual(balance.captured, "0.000000")
  })
})

describe("fallback", () => {
  it("tries the next upstream when the first is a closed port or answers 500, and bills normally", async () => {
    const customer = await h.admin.customer()
    const expected: Array<Expected> = []
    const brokenBefore = h.broken.calls().length
    for (const model of ["fallback-closed", "fallback-500"]) {
      const plain = await openai(customer.key).chat.completions.create({ model, messages: hello })
      assertEcho(plain.choices[0].message.content)
      assert.strictEqual(plain.model, model)
      const usage = plain.usage as OpenAI.CompletionUsage
      expected.push({
        requestId: undefined,
        model,
        outcome: { _tag: "Usage", tokens: { input: usage.prompt_tokens, output: usage.completion_tokens } }
      })
      const streamed = await anthropic(customer.key)
        .messages.stream({ model, max_tokens: 256, messages: hello })
        .finalMessage()
      assertEcho(streamed.content[0].type === "text" ? streamed.content[0].text : "")
      expected.push({
        requestId: undefined,
        model,
        outcome: { _tag: "Usage", tokens: { input: streamed.usage.input_tokens, output: streamed.usage.output_tokens } }
      })
    }
    assert.strictEqual(h.broken.calls().length - brokenBefore, 2, "the 500 upstream was tried first each time")
    await assertBilled(h.admin, customer, expected)
  })
})

describe("a stream cut after the first byte", () => {
  it("is not retried elsewhere; the client keeps what arrived and pays for the delivered tokens only", async () => {
    const customer = await h.admin.customer()
    const expected: Array<Expected> = []
    const model = "two-upstreams"

    // OpenAI client, Anthropic upstream first: message_start, ping, block start, two deltas, then the socket drops.
    const before = h.sim.calls().length
    h.sim.setFaults({ cutAfter: 5, replyTokens: 60 }, 1)
    const stream = await openai(customer.key).chat.completions.create({ model, messages: hello, stream: true })
    let text = ""
    const failure = await caught<Error>(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
      })()
    )
    assert.match(failure.message, /failed before it finished|stream/i)
    assert.isNotEmpty(text)
    assert.isTrue("Echo: Hello from the matrix".startsWith(text) || text.startsWith("Echo:"), text)
    assert.strictEqual(h.sim.calls().length - before, 1, "no second upstream after the first byte")
    expected.push({
      requestId: undefined,
      model,
      outcome: {
        _tag: "Delivered",
        tokens: { input: countOpenAIChat({ messages: hello }), output: countText(text) }
      }
    })

    // Anthropic client on an OpenAI upstream: the SDK sees an error event after the delivered deltas.
    h.sim.setFaults({ cutAfter: 3, replyTokens: 60 }, 1)
    const events = await anthropic(customer.key).messages.create({
      model: "sim-openai",
      max_tokens: 256,
      messages: hello,
      stream: true
    })
    let delivered = ""
    const broken = await caught<Error>(
      (async () => {
        for await (const event of events) {
          if (event.type === "content_block_delta" && event.delta.type === "text_delta") delivered += event.delta.text
        }
      })()
    )
    assert.instanceOf(broken, Error)
    assert.isNotEmpty(delivered)
    expected.push({
      requestId: undefined,
      model: "sim-openai",
      outcome: {
        _tag: "Delivered",
        tokens: { input: countAnthropicMessages({ messages: hello }), output: countText(delivered) }
      }
    })
    await assertBilled(h.admin, customer, expected)
  })
})

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 60 && !check(); i++) await sleep(50)
  return check()
}

describe("an upstream error event mid-stream", () => {
  it("reaches each client in band, and the account pays for the delivered tokens only", async () => {
    const customer = await h.admin.customer()
    h.sim.setFaults({ errorAfter: 5, replyTokens: 60 }, 1)
    const stream = await openai(customer.key).chat.completions.create({
      model: "sim-anthropic",
      messages: hello,
      stream: true
    })
    let text = ""
    const failure = await caught<Error>(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
      })()
    )
    assert.instanceOf(failure, OpenAI.APIError)
    assert.isNotEmpty(text)
    h.sim.setFaults({ errorAfter: 4, replyTokens: 60 }, 1)
    const events = await anthropic(customer.key).messages.create({
      model: "sim-openai",
      max_tokens: 256,
      messages: hello,
      stream: true
    })
    let delivered = ""
    const broken = await caught<Error>(
      (async () => {
        for await (const event of events) {
          if (event.type === "content_block_delta" && event.delta.type === "text_delta") delivered += event.delta.text
        }
      })()
    )
    assert.instanceOf(broken, Anthropic.APIError)
    assert.isNotEmpty(delivered)
    await assertBilled(h.admin, customer, [
      {
        requestId: undefined,
        model: "sim-anthropic",
        outcome: { _tag: "Delivered", tokens: { input: countOpenAIChat({ messages: hello }), output: countText(text) } }
      },
      {
        requestId: undefined,
        model: "sim-openai",
        outcome: {
          _tag: "Delivered",
          tokens: { input: countAnthropicMessages({ messages: hello }), output: countText(delivered) }
        }
      }
    ])
  })
})

describe("a client that gives up before the first byte", () => {
  it("aborts the upstream call and releases the hold in full", async () => {
    const customer = await h.admin.customer()
    h.sim.setFaults({ latencyMs: 3000 }, 1)
    const before = h.sim.calls().length
    const abort = new AbortController()
    setTimeout(() => abort.abort(), 300)
    await caught(
      openai(customer.key).chat.completions.create({ model: "sim-openai", messages: hello }, { signal: abort.signal })
    )
    assert.isTrue(await waitFor(() => h.sim.calls()[before]?.abandoned === true), "the upstream connection closed")
    await assertBilled(h.admin, customer, [
      { requestId: undefined, model: "sim-openai", outcome: { _tag: "Released", reason: "cancelled" } }
    ])
  })
})

describe("a client that disconnects mid-stream", () => {
  it.each(["openai", "anthropic"] as const)(
    "%s client: the upstream call is aborted and the account pays for what was delivered",
    async (dialect) => {
      const customer = await h.admin.customer()
      const model = dialect === "openai" ? "sim-anthropic" : "sim-openai"
      h.sim.setFaults({ chunkDelayMs: 250, replyTokens: 200 }, 1)
      const before = h.sim.calls().length
      const abort = new AbortController()
      let text = ""
      if (dialect === "openai") {
        const stream = await openai(customer.key).chat.completions.create(
          { model, messages: hello, stream: true },
          { signal: abort.signal }
        )
        await (async () => {
          for await (const chunk of stream) {
            text += chunk.choices[0]?.delta.content ?? ""
            if (text.length > 0) break
          }
        })().finally(() => abort.abort())
      } else {
        const stream = await anthropic(customer.key).messages.create(
          { model, max_tokens: 1024, messages: hello, stream: true },
          { signal: abort.signal }
        )
        await (async () => {
          for await (const event of stream) {
            if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text
            if (text.length > 0) break
          }
        })().finally(() => abort.abort())
      }
      assert.isNotEmpty(text)
      const upstream = h.sim.calls()[before]
      assert.isTrue(await waitFor(() => h.sim.calls()[before]?.abandoned === true), "the upstream connection closed")
      assert.strictEqual(upstream.path, dialect === "openai" ? "/v1/messages" : "/v1/chat/completions")
      const input =
        dialect === "openai" ? countOpenAIChat({ messages: hello }) : countAnthropicMessages({ messages: hello })
      await assertBilled(h.admin, customer, [
        { requestId: undefined, model, outcome: { _tag: "Delivered", tokens: { input, output: countText(text) } } }
      ])
    }
  )
})

describe("refusals before any hold", () => {
  it("answers an unknown model with 404 model_not_found in each dialect", async () => {
    const customer = await h.admin.customer()
    const viaOpenAI = await caught<InstanceType<typeof OpenAI.APIError>>(
      openai(customer.key).chat.completions.create({ model: "no-such-model", messages: hello })
    )
    assert.strictEqual(viaOpenAI.status, 404)
    assert.strictEqual(viaOpenAI.code, "model_not_found")
    assert.strictEqual(viaOpenAI.type, "invalid_request_error")
    const viaAnthropic = await caught<InstanceType<typeof Anthropic.APIError>>(
      anthropic(customer.key).messages.create({ model: "no-such-model", max_tokens: 10, messages: hello })
    )
    assert.instanceOf(viaAnthropic, Anthropic.NotFoundError)
    assert.strictEqual((viaAnthropic.error as Wire).error.type, "not_found_error")
    const viaGoogle = await caught<{ status: number; message: string }>(
      google(customer.key).models.generateContent({ model: "no-such-model", contents: HELLO })
    )
    assert.strictEqual(viaGoogle.status, 404)
    assert.match(viaGoogle.message, /NOT_FOUND/)
    const ledger = await h.admin.ledger(customer.accountId)
    assert.notInclude(
      ledger.map((e) => e.type),
      "HoldPlaced"
    )
  })

  it("refuses a model outside the key's allow-list with 403, and serves the allowed one", async () => {
    const customer = await h.admin.customer({ models: ["sim-gemini"] })
    const viaOpenAI = await caught<InstanceType<typeof OpenAI.APIError>>(
      openai(customer.key).chat.completions.create({ model: "sim-openai", messages: hello })
    )
    assert.strictEqual(viaOpenAI.status, 403)
    assert.strictEqual(viaOpenAI.type, "permission_error")
    const viaAnthropic = await caught<InstanceType<typeof Anthropic.APIError>>(
      anthropic(customer.key).messages.create({ model: "sim-anthropic", max_tokens: 10, messages: hello })
    )
    assert.instanceOf(viaAnthropic, Anthropic.PermissionDeniedError)
    assert.strictEqual((viaAnthropic.error as Wire).error.type, "permission_error")
    const allowed = await openai(customer.key).chat.completions.create({ model: "sim-gemini", messages: hello })
    assertEcho(allowed.choices[0].message.content)
    const usage = allowed.usage as OpenAI.CompletionUsage
    await assertBilled(h.admin, customer, [
      {
        requestId: undefined,
        model: "sim-gemini",
        outcome: { _tag: "Usage", tokens: { input: usage.prompt_tokens, output: usage.completion_tokens } }
      }
    ])
  })

  it("answers a balance too small for the hold with 402 insufficient_quota, x-should-retry: false, nothing held", async () => {
    const customer = await h.admin.customer({ deposit: "0.000010" })
    const viaOpenAI = await caught<InstanceType<typeof OpenAI.APIError>>(
      openai(customer.key).chat.completions.create({ model: "sim-openai", messages: hello })
    )
    assert.strictEqual(viaOpenAI.status, 402)
    assert.strictEqual(viaOpenAI.code, "insufficient_quota")
    assert.strictEqual(viaOpenAI.type, "insufficient_quota")
    assert.strictEqual(viaOpenAI.headers?.get("x-should-retry"), "false")
    const viaAnthropic = await caught<InstanceType<typeof Anthropic.APIError>>(
      anthropic(customer.key).messages.create({ model: "sim-anthropic", max_tokens: 4000, messages: hello })
    )
    assert.strictEqual(viaAnthropic.status, 402)
    assert.strictEqual((viaAnthropic.error as Wire).error.type, "billing_error")
    assert.strictEqual(viaAnthropic.headers?.get("x-should-retry"), "false")
    const ledger = await h.admin.ledger(customer.accountId)
    assert.deepStrictEqual(
      ledger.map((e) => e.type),
      ["AccountOpened", "FundsDeposited"]
    )
    // The same key with a hold that fits (a small max_tokens) is served.
    const small = await anthropic(customer.key).messages.create({
      model: "sim-anthropic",
      max_tokens: 8,
      messages: hello
    })
    assert.strictEqual(small.stop_reason, "max_tokens")
  })
})

describe("the hold covers the request's own max_tokens", () => {
  // The hold is max_tokens (or the model's cap when the request names none), and that limit is what goes upstream.
  it("never costs more than was held", async () => {
    const customer = await h.admin.customer()
    h.sim.setFaults({ replyTokens: 5000 }, 1)
    const message = await anthropic(customer.key).messages.create({
      model: "sim-anthropic",
      max_tokens: 6000,
      messages: hello
    })
    assert.strictEqual(message.usage.output_tokens, 5000)
    const ledger = await h.admin.ledger(customer.accountId)
    assert.notInclude(
      ledger.map((e) => e.type),
      "OverageCharged"
    )
  })
})

describe("an upstream that rejects the request", () => {
  it("answers 400 in the client's dialect with the vendor's reason, and releases the hold", async () => {
    const customer = await h.admin.customer()
    // Anthropic wants a thinking budget of at least 1024 tokens; the gateway passes the request through as sent.
    const rejected = await caught<InstanceType<typeof Anthropic.APIError>>(
      anthropic(customer.key).messages.create({
        model: "sim-anthropic",
        max_tokens: 2048,
        thinking: { type: "enabled", budget_tokens: 100 },
        messages: hello
      })
    )
    assert.strictEqual(rejected.status, 400)
    assert.strictEqual((rejected.error as Wire).error.type, "invalid_request_error")
    assert.match(rejected.message, /budget_tokens/)
    await assertBilled(h.admin, customer, [
      { requestId: undefined, model: "sim-anthropic", outcome: { _tag: "Released", reason: "rejected" } }
    ])
  })
})

describe("who refused, and which field", () => {
  const post = (path: string, key: string, body: unknown, url = h.gateway.url) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "x-goog-api-key": key,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json"
      },
      body: JSON.stringify(body)
    })

  it("a check the gateway makes before any upstream has its own code and names the field in param", async () => {
    const customer = await h.admin.customer()
    // A file by id exists only on OpenAI's own Responses API: refused for a model on another protocol.
    const response = await post("/v1/responses", customer.key, {
      model: "sim-anthropic",
      input: [{ role: "user", content: [{ type: "input_file", file_id: "file-1" }] }]
    })
    assert.strictEqual(response.status, 400)
    const { error } = (await response.json()) as Wire
    assert.strictEqual(error.code, "unsupported_parameter")
    assert.strictEqual(error.param, "input.0.content.0")
    assert.strictEqual(error.type, "invalid_request_error")
    await assertBilled(h.admin, customer, [])
  })

  it("the upstream's own rejection says so: upstream_rejected", async () => {
    const customer = await h.admin.customer()
    h.sim.setFaults({ status: 400 }, 1)
    const rejected = await post("/v1/chat/completions", customer.key, { model: "sim-openai", messages: hello })
    assert.strictEqual(rejected.status, 400)
    assert.strictEqual(((await rejected.json()) as Wire).error.code, "upstream_rejected")
  })

  it("Google's envelope carries the field and the code in its details", async () => {
    const customer = await makeAdmin(catalog).customer()
    const response = await post(
      "/v1beta/models/imgchat-2.5-flash-image:generateContent",
      customer.key,
      {
        contents: [{ role: "user", parts: [{ text: "Generate an image: a cat" }] }],
        tools: [{ functionDeclarations: [{ name: "f", parameters: { type: "object" } }] }]
      },
      catalog.url
    )
    assert.strictEqual(response.status, 400)
    const { error } = (await response.json()) as Wire
    assert.strictEqual(error.status, "INVALID_ARGUMENT")
    assert.deepInclude(error.details, {
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "TOOLS_NOT_SUPPORTED",
      domain: "tollgate"
    })
    const violations = (error.details as Array<Wire>).find(
      (d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest"
    )
    assert.strictEqual(violations?.fieldViolations?.[0]?.field, "tools")
  })
})

describe("a messages base URL with an extra /v1", () => {
  it("gets a 404 in Anthropic's envelope that says to remove it", async () => {
    const customer = await h.admin.customer()
    const error = await caught<InstanceType<typeof Anthropic.APIError>>(
      anthropic(customer.key, `${h.gateway.url}/v1`).messages.create({
        model: "sim-anthropic",
        max_tokens: 16,
        messages: hello
      })
    )
    assert.strictEqual(error.status, 404)
    assert.strictEqual((error.error as Wire).error.type, "not_found_error")
    assert.match(error.message, /extra \/v1/)
  })
})

describe("side endpoints", () => {
  it("counts tokens for every model, whatever its upstream protocol", async () => {
    const customer = await h.admin.customer()
    const client = anthropic(customer.key)
    const counts = []
    for (const model of SIM_MODELS) {
      const counted = await client.messages.countTokens({ model, messages: hello, system: "Be brief." })
      counts.push(counted.input_tokens)
    }
    assert.isAbove(counts[0], 0)
    assert.deepStrictEqual(counts, [counts[0], counts[0], counts[0]])
    assert.strictEqual(counts[0], countAnthropicMessages({ messages: hello, system: "Be brief." }))
    const unknown = await caught<InstanceType<typeof Anthropic.APIError>>(
      client.messages.countTokens({ model: "no-such-model", messages: hello })
    )
    assert.strictEqual(unknown.status, 404)
  })

  it("lists the three sim models in OpenAI's shape and, with anthropic-version, in Anthropic's", async () => {
    const admin = makeAdmin(catalog)
    const customer = await admin.customer()
    const listed = []
    for await (const model of openai(customer.key, catalog.url).models.list()) listed.push(model)
    // The default catalog may serve other families too; the three text models are there, all the simulator's.
    const isText = (id: string) => (SIM_MODELS as ReadonlyArray<string>).includes(id)
    assert.deepStrictEqual(
      listed.filter((m) => isText(m.id)).map((m) => [m.id, m.object, m.owned_by]),
      SIM_MODELS.map((id) => [id, "model", "simulator"])
    )
    assert.isTrue(listed.every((m) => m.owned_by === "simulator"))
    const anthropicListed = []
    for await (const model of anthropic(customer.key, catalog.url).models.list()) anthropicListed.push(model)
    assert.deepStrictEqual(
      anthropicListed.filter((m) => isText(m.id)).map((m) => [m.id, m.type]),
      SIM_MODELS.map((id) => [id, "model"])
    )
    assert.isTrue(anthropicListed.every((m) => !Number.isNaN(Date.parse(m.created_at))))
    // And the default catalog really serves them, both SDKs, streamed and not.
    for (const model of SIM_MODELS) {
      const plain = await openai(customer.key, catalog.url).chat.completions.create({ model, messages: hello })
      assertEcho(plain.choices[0].message.content)
      const streamed = await anthropic(customer.key, catalog.url)
        .messages.stream({ model, max_tokens: 128, messages: hello })
        .finalMessage()
      assertEcho(streamed.content[0].type === "text" ? streamed.content[0].text : "")
    }
    const replay = await admin.call("POST", "/admin/replay")
    assert.isTrue(replay.body.ok)
  })
})
