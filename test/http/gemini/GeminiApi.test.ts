/**
 * Gemini's paths beyond chat on the default catalog: `:countTokens` (not billed, the count the chat hold is placed
 * from), `:embedContent` and `:batchEmbedContents` (billed exactly as `/v1/embeddings` bills the same texts), through
 * `@google/genai` pointed at the gateway and through raw fetch in the shapes other clients (the AI SDK) send.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { ApiError, GoogleGenAI } from "@google/genai"
import fc from "fast-check"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { countGeminiContents } from "../../../src/adapters/tokenizer/ChatTally.ts"
import { type Admin, closeAfterReplay, type Customer, makeAdmin } from "../chat/ChatHarness.ts"
import { holdsOf, type Wire } from "../images/ImageHarness.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { TASK_TYPES } from "../../../src/http/GeminiApi.ts"

let gateway: TestGateway
let admin: Admin
beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
}, 60_000)
afterAll(() => closeAfterReplay(admin === undefined ? undefined : { admin, close: () => gateway.close() }))

const sdk = (key: string) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url } })

const post = async (path: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key === undefined ? {} : { "x-goog-api-key": key }),
      ...headers
    },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, body: JSON.parse(text) as Wire }
}

const gemini = (model: string, method: string, key: string | undefined, body: unknown) =>
  post(`/v1beta/models/${model}:${method}`, key, body)

/** Asserts a refusal in Google's envelope: `{"error":{"code","message","status"}}`, the message matching `about`. */
const assertGoogleError = (
  answer: { status: number; body: Wire },
  status: number,
  googleStatus: string,
  about: RegExp,
  label = ""
) => {
  assert.strictEqual(answer.status, status, `${label} ${JSON.stringify(answer.body)}`)
  assert.deepStrictEqual(Object.keys(answer.body), ["error"], label)
  assert.strictEqual(answer.body.error.code, status, label)
  assert.strictEqual(answer.body.error.status, googleStatus, label)
  assert.match(answer.body.error.message, about, label)
}

const assertNothingHeld = async (customer: Customer) => {
  const entries = await admin.ledger(customer.accountId)
  assert.deepStrictEqual(
    entries.filter((e) => e.type !== "FundsDeposited" && e.type !== "AccountOpened").map((e) => e.type),
    [],
    "nothing was held or charged"
  )
}

const HELLO = [{ role: "user", parts: [{ text: "Hello there, how many tokens is this?" }] }]
const SYSTEM = { parts: [{ text: "Be brief." }] }
const TOOLS = [
  {
    functionDeclarations: [
      { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: {} } } }
    ]
  }
]

describe(":countTokens", () => {
  it("counts with the SDK for text models of every upstream protocol (and embeddings models), the chat hold's count, charging nothing", async () => {
    const customer = await admin.customer()
    const ai = sdk(customer.key)
    const expected = countGeminiContents({ contents: HELLO })
    // Embeddings models too, as Google counts for gemini-embedding-001.
    for (const model of ["sim-gemini", "sim-openai", "sim-anthropic", "sim-embedding"]) {
      const counted = await ai.models.countTokens({ model, contents: HELLO })
      assert.strictEqual(counted.totalTokens, expected, model)
      const plain = await ai.models.countTokens({ model, contents: "Hello there, how many tokens is this?" })
      assert.strictEqual(plain.totalTokens, expected, `${model}, a string`)
    }
    assert.isAbove(expected, 0)
    await assertNothingHeld(customer)
  })

  it("takes a generateContentRequest with system instruction and tools, and the key as ?key=", async () => {
    const customer = await admin.customer()
    const wrapped = await post(`/v1beta/models/sim-openai:countTokens?key=${customer.key}`, undefined, {
      generateContentRequest: {
        model: "models/sim-openai",
        contents: HELLO,
        systemInstruction: SYSTEM,
        tools: TOOLS,
        generationConfig: { maxOutputTokens: 10 }
      }
    })
    assert.strictEqual(wrapped.status, 200, JSON.stringify(wrapped.body))
    const expected = countGeminiContents({ contents: HELLO, systemInstruction: SYSTEM, tools: TOOLS })
    assert.deepStrictEqual(wrapped.body, { totalTokens: expected })
    assert.isAbove(expected, countGeminiContents({ contents: HELLO }))
    await assertNothingHeld(customer)
  })

  it("refuses bad bodies, unknown models and models the key may not use, in Google's envelope", async () => {
    const customer = await admin.customer()
    const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
      [{}, /contents/],
      [{ contents: "hi" }, /contents/],
      [{ contents: [3] }, /contents\[0\]/],
      [{ contents: [{ role: "wizard", parts: [{ text: "x" }] }] }, /role/],
      [{ contents: [{ parts: "x" }] }, /parts/],
      [{ contents: HELLO, generateContentRequest: { contents: HELLO } }, /generateContentRequest/],
      [{ generateContentRequest: "x" }, /generateContentRequest/],
      [{ generateContentRequest: { model: "models/sim-gemini", contents: HELLO } }, /model/],
      [{ generateContentRequest: { contents: HELLO, tools: {} } }, /tools/],
      [[1, 2], /JSON object/]
    ]
    for (const [body, about] of cases) {
      assertGoogleError(
        await gemini("sim-openai", "countTokens", customer.key, body),
        400,
        "INVALID_ARGUMENT",
        about,
        JSON.stringify(body)
      )
    }
    assertGoogleError(
      await gemini("no-such-model", "countTokens", customer.key, { contents: HELLO }),
      404,
      "NOT_FOUND",
      /no-such-model/
    )
    assertGoogleError(
      await gemini("sim-gemini", "countTokens", undefined, { contents: HELLO }),
      401,
      "UNAUTHENTICATED",
      /API key/
    )
    assertGoogleError(
      await gemini("video-model-2.0", "countTokens", customer.key, { contents: HELLO }),
      400,
      "INVALID_ARGUMENT",
      /\/v1\/videos/
    )
    const limited = await admin.customer({ models: ["sim-openai"] })
    const denied = await gemini("sim-gemini", "countTokens", limited.key, { contents: HELLO })
    const generate = await gemini("sim-gemini", "generateContent", limited.key, { contents: HELLO })
    assertGoogleError(denied, 403, "PERMISSION_DENIED", /sim-gemini/)
    assert.deepStrictEqual(denied, generate, "the same refusal as generateContent")
    const thrown = await sdk(customer.key)
      .models.countTokens({ model: "no-such-model", contents: "hi" })
      .then(
        () => undefined,
        (error: unknown) => error
      )
    assert.instanceOf(thrown, ApiError)
    assert.strictEqual((thrown as ApiError).status, 404)
    await assertNothingHeld(customer)
    await assertNothingHeld(limited)
  })
})

const TEXTS = ["The quick brown fox jumps over the lazy dog.", "Tollgate bills every token it sees."]

/** Every hold of the account as (model, held, cost, captured, refund): what two equal calls must share. */
const billing = async (customer: Customer) =>
  (await holdsOf(admin, customer.accountId)).map((h) => [h.hold.model, h.held, h.cost, h.captured, h.refund ?? null])

const openAiEmbeddings = async (key: string, body: unknown) =>
  post("/v1/embeddings", undefined, body, { authorization: `Bearer ${key}` })

describe(":embedContent and :batchEmbedContents", () => {
  for (const model of ["sim-embedding", "sim-embedding-gemini"]) {
    it(`${model}: the SDK's embedContent gives /v1/embeddings' vectors, billed as /v1/embeddings bills them`, async () => {
      const customer = await admin.customer()
      const twin = await admin.customer()
      const ai = sdk(customer.key)
      const answer = await ai.models.embedContent({ model, contents: TEXTS, config: { outputDimensionality: 16 } })
      assert.strictEqual(answer.embeddings?.length, 2)
      const reference = await openAiEmbeddings(twin.key, {
        model,
        input: TEXTS,
        dimensions: 16,
        encoding_format: "float"
      })
      assert.strictEqual(reference.status, 200)
      answer.embeddings?.forEach((embedding, index) => {
        assert.strictEqual(embedding.values?.length, 16)
        assert.deepStrictEqual(embedding.values, reference.body.data[index].embedding)
      })
      const one = await ai.models.embedContent({ model, contents: TEXTS[0] as string })
      assert.strictEqual(one.embeddings?.length, 1)
      await openAiEmbeddings(twin.key, { model, input: TEXTS[0], encoding_format: "float" })
      const billed = await billing(customer)
      assert.strictEqual(billed.length, 2)
      assert.deepStrictEqual(billed, await billing(twin))
      assert.notStrictEqual(billed[0]?.[3], "0.000000", "something was charged")
    })
  }

  it("answers embedContent in Google's shape, as the AI SDK sends it, billed as /v1/embeddings", async () => {
    const customer = await admin.customer()
    const twin = await admin.customer()
    const single = await gemini("sim-embedding-gemini", "embedContent", customer.key, {
      model: "models/sim-embedding-gemini",
      content: { parts: [{ text: TEXTS[0] }] },
      outputDimensionality: 8,
      taskType: "RETRIEVAL_QUERY"
    })
    assert.strictEqual(single.status, 200, JSON.stringify(single.body))
    assert.deepStrictEqual(Object.keys(single.body), ["embedding"])
    assert.deepStrictEqual(Object.keys(single.body.embedding), ["values"])
    assert.strictEqual(single.body.embedding.values.length, 8)
    const snake = await gemini("sim-embedding-gemini", "embedContent", customer.key, {
      content: { role: "user", parts: [{ text: TEXTS[0] }] },
      output_dimensionality: 8,
      task_type: "RETRIEVAL_DOCUMENT",
      title: "A fox"
    })
    assert.strictEqual(snake.status, 200, JSON.stringify(snake.body))
    assert.deepStrictEqual(snake.body, single.body)
    const batch = await gemini("sim-embedding-gemini", "batchEmbedContents", customer.key, {
      requests: TEXTS.map((text) => ({
        model: "models/sim-embedding-gemini",
        content: { role: "user", parts: [{ text }] },
        taskType: "SEMANTIC_SIMILARITY"
      }))
    })
    assert.strictEqual(batch.status, 200, JSON.stringify(batch.body))
    assert.deepStrictEqual(Object.keys(batch.body), ["embeddings"])
    assert.strictEqual(batch.body.embeddings.length, 2)
    for (const input of [TEXTS[0], TEXTS[0], TEXTS]) {
      await openAiEmbeddings(twin.key, { model: "sim-embedding-gemini", input })
    }
    assert.deepStrictEqual(await billing(customer), await billing(twin))
  })

  it("gives each batch request its own outputDimensionality, cutting the vector as Gemini does", async () => {
    const customer = await admin.customer()
    const full = await gemini("sim-embedding", "embedContent", customer.key, {
      content: { parts: [{ text: TEXTS[1] }] }
    })
    const batch = await gemini("sim-embedding", "batchEmbedContents", customer.key, {
      requests: [
        { model: "models/sim-embedding", content: { parts: [{ text: TEXTS[1] }] }, outputDimensionality: 4 },
        { model: "models/sim-embedding", content: { parts: [{ text: TEXTS[1] }] } }
      ]
    })
    assert.strictEqual(batch.status, 200, JSON.stringify(batch.body))
    assert.deepStrictEqual(batch.body.embeddings[0].values, full.body.embedding.values.slice(0, 4))
    assert.deepStrictEqual(batch.body.embeddings[1].values, full.body.embedding.values)
  })

  it("refuses bad bodies with a 400 in Google's envelope, holding nothing", async () => {
    const customer = await admin.customer()
    const text = (t: unknown) => ({ parts: [{ text: t }] })
    const request = (extra: Record<string, unknown> = {}) => ({
      model: "models/sim-embedding",
      content: text("hi"),
      ...extra
    })
    const single: ReadonlyArray<readonly [unknown, RegExp]> = [
      [{}, /content/],
      [{ content: "hi" }, /content/],
      [{ content: { parts: [] } }, /content\.parts/],
      [{ content: { parts: "hi" } }, /content\.parts/],
      [{ content: text("") }, /content/],
      [{ content: text(7) }, /content\.parts\[0\]/],
      [{ content: { parts: [{ inlineData: { mimeType: "image/png", data: "AAAA" } }] } }, /text/],
      [{ content: text("hi"), model: "models/sim-embedding-gemini" }, /model/],
      [{ content: text("hi"), outputDimensionality: 0 }, /outputDimensionality/],
      [{ content: text("hi"), outputDimensionality: 2.5 }, /outputDimensionality/],
      [{ content: text("hi"), taskType: "SUMMARIZE" }, /taskType/],
      [{ content: text("hi"), title: 3 }, /title/],
      [[1], /JSON object/]
    ]
    for (const [body, about] of single) {
      assertGoogleError(
        await gemini("sim-embedding", "embedContent", customer.key, body),
        400,
        "INVALID_ARGUMENT",
        about,
        JSON.stringify(body)
      )
    }
    const batches: ReadonlyArray<readonly [unknown, RegExp]> = [
      [{}, /requests/],
      [{ requests: [] }, /requests/],
      [{ requests: {} }, /requests/],
      [{ requests: [request(), 3] }, /requests\[1\]/],
      [{ requests: [request(), request({ model: "models/sim-embedding-gemini" })] }, /requests\[1\]\.model/],
      [{ requests: [request({ content: { parts: [] } })] }, /requests\[0\]\.content\.parts/],
      [{ requests: [request({ outputDimensionality: -1 })] }, /requests\[0\]\.outputDimensionality/],
      [{ requests: Array.from({ length: 101 }, () => request()) }, /100/]
    ]
    for (const [body, about] of batches) {
      assertGoogleError(
        await gemini("sim-embedding", "batchEmbedContents", customer.key, body),
        400,
        "INVALID_ARGUMENT",
        about,
        JSON.stringify(body).slice(0, 120)
      )
    }
    const hundred = await gemini("sim-embedding", "batchEmbedContents", customer.key, {
      requests: Array.from({ length: 100 }, () => request())
    })
    assert.strictEqual(hundred.status, 200, "exactly 100 requests is within Google's limit")
    assert.strictEqual(hundred.body.embeddings.length, 100)
    const holds = await holdsOf(admin, customer.accountId)
    assert.strictEqual(holds.length, 1, "only the valid batch was held")
  })

  it("answers any batch with one vector per request, each of its size, or a 400 holding nothing", async () => {
    const customer = await admin.customer({ deposit: "1000" })
    const weighted = <A, B>(good: fc.Arbitrary<A>, bad: fc.Arbitrary<B>) =>
      fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: bad, weight: 1 })
    const part = weighted(
      fc.record({ text: fc.string({ minLength: 1, maxLength: 12 }) }),
      fc.oneof(
        fc.constant({ text: "" }),
        fc.constant({ inlineData: { mimeType: "image/png", data: "AAAA" } }),
        fc.jsonValue({ maxDepth: 1 })
      )
    )
    const request = fc.record(
      {
        model: weighted(fc.constantFrom("models/sim-embedding", "sim-embedding"), fc.jsonValue({ maxDepth: 1 })),
        content: weighted(
          fc.record({ role: fc.constant("user"), parts: fc.array(part, { minLength: 1, maxLength: 3 }) }),
          fc.jsonValue({ maxDepth: 2 })
        ),
        outputDimensionality: weighted(fc.integer({ min: 1, max: 24 }), fc.oneof(fc.integer({ max: 0 }), fc.double())),
        taskType: weighted(fc.constantFrom(...TASK_TYPES), fc.string({ maxLength: 6 }))
      },
      { requiredKeys: ["content"] }
    )
    let answered = 0
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 4 }), async (generated) => {
        // What the gateway reads: the JSON text (NaN becomes null, -0 becomes 0).
        const requests: ReadonlyArray<Wire> = JSON.parse(JSON.stringify(generated))
        const answer = await gemini("sim-embedding", "batchEmbedContents", customer.key, { requests })
        if (answer.status !== 200) {
          assertGoogleError(answer, 400, "INVALID_ARGUMENT", /^requests\[\d+\]/, JSON.stringify(requests))
          return
        }
        answered += 1
        assert.strictEqual(answer.body.embeddings.length, requests.length)
        requests.forEach((sent, index) => {
          const values: ReadonlyArray<number> = answer.body.embeddings[index].values
          if (typeof sent.outputDimensionality === "number")
            assert.strictEqual(values.length, sent.outputDimensionality)
          else assert.isAbove(values.length, 24)
        })
      }),
      { numRuns: 40, seed: 16 }
    )
    assert.isAbove(answered, 0, "some batches were valid")
    assert.isBelow(answered, 40, "some batches were not")
    assert.strictEqual((await holdsOf(admin, customer.accountId)).length, answered, "one hold per answered batch")
  })

  it("refuses unknown models (404), other kinds (400 naming the endpoint) and models off the key's list (403)", async () => {
    const customer = await admin.customer()
    const body = { content: { parts: [{ text: "hi" }] } }
    const batchBody = { requests: [{ model: "models/sim-openai", content: { parts: [{ text: "hi" }] } }] }
    assertGoogleError(await gemini("no-such-model", "embedContent", customer.key, body), 404, "NOT_FOUND", /no-such/)
    assertGoogleError(
      await gemini("sim-openai", "embedContent", customer.key, body),
      400,
      "INVALID_ARGUMENT",
      /sim-openai:generateContent/
    )
    assertGoogleError(
      await gemini("sim-openai", "batchEmbedContents", customer.key, batchBody),
      400,
      "INVALID_ARGUMENT",
      /sim-openai:generateContent/
    )
    assertGoogleError(
      await gemini("sim-tts", "embedContent", customer.key, body),
      400,
      "INVALID_ARGUMENT",
      /\/v1\/audio\/speech/
    )
    assertGoogleError(await gemini("sim-embedding", "embedContent", undefined, body), 401, "UNAUTHENTICATED", /key/)
    assertGoogleError(await gemini("sim-embedding", "fooBar", customer.key, body), 404, "NOT_FOUND", /fooBar/)
    const limited = await admin.customer({ models: ["sim-embedding-gemini"] })
    assertGoogleError(
      await gemini("sim-embedding", "embedContent", limited.key, body),
      403,
      "PERMISSION_DENIED",
      /sim-embedding/
    )
    const poor = await admin.customer({ deposit: "0" })
    assertGoogleError(await gemini("sim-embedding", "embedContent", poor.key, body), 402, "RESOURCE_EXHAUSTED", /quota/)
    await assertNothingHeld(customer)
    await assertNothingHeld(limited)
  })
})

describe("the Gemini upstream of an embeddings model", () => {
  let sim: RunningSimulator
  let own: TestGateway
  let ownAdmin: Admin
  let dir: string
  beforeAll(async () => {
    sim = await startSimulator()
    dir = mkdtempSync(join(tmpdir(), "tollgate-gemini-embed-"))
    const configPath = join(dir, "tollgate.yaml")
    writeFileSync(
      configPath,
      `
upstreams:
  gem: { protocol: gemini, baseUrl: "${sim.baseUrl}", apiKey: "${sim.apiKey}", timeoutMs: 20000 }
models:
  - { id: emb-gemini, plugin: embeddings, upstreams: [gem], upstreamModel: gemini-embedding-001, pricing: { input: "0.02" } }
`
    )
    own = await startTestGateway({ configPath })
    ownAdmin = makeAdmin(own)
  }, 60_000)
  afterAll(async () => {
    await closeAfterReplay(ownAdmin === undefined ? undefined : { admin: ownAdmin, close: () => own.close() }, sim)
    rmSync(dir, { recursive: true, force: true })
  })

  it("is sent each request's taskType and title (which shape Gemini's vectors)", async () => {
    const customer = await ownAdmin.customer()
    sim.clearCalls()
    const answer = await fetch(`${own.url}/v1beta/models/emb-gemini:batchEmbedContents`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": customer.key },
      body: JSON.stringify({
        requests: [
          { model: "models/emb-gemini", content: { parts: [{ text: "a query" }] }, taskType: "RETRIEVAL_QUERY" },
          {
            model: "models/emb-gemini",
            content: { parts: [{ text: "a document" }] },
            task_type: "RETRIEVAL_DOCUMENT",
            title: "The document"
          },
          { model: "models/emb-gemini", content: { parts: [{ text: "no hints" }] } }
        ]
      })
    })
    assert.strictEqual(answer.status, 200, await answer.clone().text())
    const sent = sim.calls().find((c) => c.path.endsWith(":batchEmbedContents"))?.body as {
      requests: ReadonlyArray<Record<string, unknown>>
    }
    assert.deepStrictEqual(
      sent.requests.map((r) => [r.content, r.taskType, r.title]),
      [
        [{ parts: [{ text: "a query" }] }, "RETRIEVAL_QUERY", undefined],
        [{ parts: [{ text: "a document" }] }, "RETRIEVAL_DOCUMENT", "The document"],
        [{ parts: [{ text: "no hints" }] }, undefined, undefined]
      ]
    )
  })
})
