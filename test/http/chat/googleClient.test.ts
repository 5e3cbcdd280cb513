/**
 * `@google/genai` with `httpOptions.baseUrl` pointed at the gateway's /v1beta path, against a Gemini upstream
 * (same dialect, converted through the IR all the same) and an OpenAI one: plain, streamed, tools, thoughts, billing.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type Content, type GenerateContentResponse, GoogleGenAI } from "@google/genai"
import { assertBilled, type Expected } from "./Billing.ts"
import { type ChatHarness, closeAfterReplay, startChatHarness } from "./ChatHarness.ts"
import {
  assertEcho,
  assertToolAnswer,
  assertUpstreamToolIds,
  HELLO,
  TOOL_RESULT,
  WEATHER_PROMPT,
  weatherSchema
} from "./Fixtures.ts"

let h: ChatHarness
beforeAll(async () => {
  h = await startChatHarness()
}, 60_000)
afterAll(() => closeAfterReplay(h))

const client = (key: string) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.gateway.url } })

const tools = [
  { functionDeclarations: [{ name: "get_weather", description: "Weather", parametersJsonSchema: weatherSchema }] }
]

const tokensOf = (response: GenerateContentResponse) => {
  const usage = response.usageMetadata
  assert.isDefined(usage)
  return {
    input: usage?.promptTokenCount ?? -1,
    output: (usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0)
  }
}

const requestIdOf = (response: GenerateContentResponse) => response.sdkHttpResponse?.headers?.["x-request-id"]

describe.each(["sim-gemini", "sim-openai"])("google SDK → %s", (model) => {
  it("answers plain and streamed, billed from the usage seen", async () => {
    const customer = await h.admin.customer()
    const ai = client(customer.key)
    const expected: Array<Expected> = []

    const plain = await ai.models.generateContent({ model, contents: HELLO })
    assertEcho(plain.text)
    assert.strictEqual(plain.candidates?.[0]?.finishReason, "STOP")
    const seen = tokensOf(plain)
    assert.match(requestIdOf(plain) ?? "", /^req_/)
    expected.push({ requestId: requestIdOf(plain), model, outcome: { _tag: "Usage", tokens: seen } })

    const chunks: Array<GenerateContentResponse> = []
    for await (const chunk of await ai.models.generateContentStream({ model, contents: HELLO })) chunks.push(chunk)
    assert.strictEqual(chunks.map((c) => c.text ?? "").join(""), plain.text)
    assert.isAbove(chunks.length, 1)
    const last = chunks.at(-1) as GenerateContentResponse
    assert.strictEqual(last.candidates?.[0]?.finishReason, "STOP")
    assert.deepStrictEqual(tokensOf(last), seen)
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: seen } })

    await assertBilled(h.admin, customer, expected)
  })

  it("calls a function and reads its response on a second turn", async () => {
    const customer = await h.admin.customer()
    const ai = client(customer.key)
    const expected: Array<Expected> = []
    const first: Array<Content> = [{ role: "user", parts: [{ text: WEATHER_PROMPT }] }]

    const turn1 = await ai.models.generateContent({ model, contents: first, config: { tools } })
    const call = turn1.functionCalls?.[0]
    assert.strictEqual(call?.name, "get_weather")
    assert.deepStrictEqual(call?.args, { city: "Paris" })
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: tokensOf(turn1) } })

    const chunks: Array<GenerateContentResponse> = []
    for await (const chunk of await ai.models.generateContentStream({ model, contents: first, config: { tools } })) {
      chunks.push(chunk)
    }
    const streamedCall = chunks.flatMap((c) => c.functionCalls ?? [])
    assert.deepStrictEqual(
      streamedCall.map((c) => [c.name, c.args]),
      [["get_weather", { city: "Paris" }]]
    )
    expected.push({
      requestId: undefined,
      model,
      outcome: { _tag: "Usage", tokens: tokensOf(chunks.at(-1) as GenerateContentResponse) }
    })

    const turn2 = await ai.models.generateContent({
      model,
      config: { tools },
      contents: [
        ...first,
        turn1.candidates?.[0]?.content as Content,
        {
          role: "user",
          parts: [{ functionResponse: { id: call?.id, name: "get_weather", response: JSON.parse(TOOL_RESULT) } }]
        }
      ]
    })
    assertToolAnswer(turn2.text)
    const upstreamId = assertUpstreamToolIds(h.sim)
    if (model === "sim-openai") assert.strictEqual(upstreamId, call?.id, "the upstream gets back the id it issued")
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: tokensOf(turn2) } })

    await assertBilled(h.admin, customer, expected)
  })

  it("returns thoughts when asked", async () => {
    const customer = await h.admin.customer()
    const ai = client(customer.key)
    const response = await ai.models.generateContent({
      model,
      contents: HELLO,
      config: { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } }
    })
    const parts = response.candidates?.[0]?.content?.parts ?? []
    const thought = parts.find((p) => p.thought === true)
    assert.match(thought?.text ?? "", /^The user wrote: /)
    assertEcho(
      parts
        .filter((p) => p.thought !== true)
        .map((p) => p.text)
        .join("")
    )
    assert.isAbove(response.usageMetadata?.thoughtsTokenCount ?? 0, 0)
    await assertBilled(h.admin, customer, [
      { requestId: requestIdOf(response), model, outcome: { _tag: "Usage", tokens: tokensOf(response) } }
    ])
  })
})
