import { assert, layer } from "@effect/vitest"
import { ApiError, type Content, GoogleGenAI } from "@google/genai"
import { Effect } from "effect"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { countGeminiContents } from "../../../src/adapters/tokenizer/ChatTally.ts"

const clientFor = (simulator: Simulator["Service"], apiKey = simulator.apiKey) =>
  new GoogleGenAI({ apiKey, httpOptions: { baseUrl: simulator.baseUrl } })

const weather = {
  functionDeclarations: [
    {
      name: "get_weather",
      description: "Current weather for a city",
      parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
    }
  ]
}

layer(Simulator.layer)("simulator speaks Gemini generateContent to the official SDK", (it) => {
  it.effect("generateContent with real usage", () =>
    Effect.gen(function* () {
      const ai = clientFor(yield* Simulator)
      const contents: Array<Content> = [{ role: "user", parts: [{ text: "Hello Gemini from the simulator" }] }]
      const response = yield* Effect.promise(() => ai.models.generateContent({ model: "gemini-2.5-flash", contents }))
      const text = response.text!
      assert.isTrue(text.startsWith("Echo: Hello Gemini from the simulator"))
      assert.strictEqual(response.candidates![0]!.finishReason, "STOP")
      assert.strictEqual(response.modelVersion, "gemini-2.5-flash")
      assert.strictEqual(response.usageMetadata!.promptTokenCount, countGeminiContents({ contents }))
      assert.strictEqual(response.usageMetadata!.candidatesTokenCount, countText(text))
      const counted = yield* Effect.promise(() => ai.models.countTokens({ model: "gemini-2.5-flash", contents }))
      assert.strictEqual(counted.totalTokens, response.usageMetadata!.promptTokenCount)
    })
  )

  it.effect("generateContentStream yields the same text; usage on the last chunk", () =>
    Effect.gen(function* () {
      const ai = clientFor(yield* Simulator)
      const request = { model: "gemini-2.5-flash", contents: "Stream something for me" }
      const chunks = yield* Effect.promise(async () => {
        const all = []
        for await (const chunk of await ai.models.generateContentStream(request)) all.push(chunk)
        return all
      })
      const plain = yield* Effect.promise(() => ai.models.generateContent(request))
      assert.isAbove(chunks.length, 2)
      assert.strictEqual(chunks.map((chunk) => chunk.text ?? "").join(""), plain.text)
      const last = chunks[chunks.length - 1]!
      assert.strictEqual(last.candidates![0]!.finishReason, "STOP")
      assert.deepStrictEqual(last.usageMetadata!.candidatesTokenCount, plain.usageMetadata!.candidatesTokenCount)
    })
  )

  it.effect("streamGenerateContent without alt=sse answers one JSON array", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const chunks = yield* Effect.promise(() =>
        fetch(`${sim.baseUrl}/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=${sim.apiKey}`, {
          method: "POST",
          body: JSON.stringify({ contents: [{ parts: [{ text: "array please" }] }] })
        }).then((response) => response.json() as Promise<Array<{ candidates: Array<{ finishReason?: string }> }>>)
      )
      assert.isAbove(chunks.length, 1)
      assert.strictEqual(chunks[chunks.length - 1]!.candidates[0]!.finishReason, "STOP")
    })
  )

  it.effect("function call, then text quoting the function response", () =>
    Effect.gen(function* () {
      const ai = clientFor(yield* Simulator)
      const question: Content = { role: "user", parts: [{ text: "What's the weather? Call get_weather." }] }
      const first = yield* Effect.promise(() =>
        ai.models.generateContent({ model: "gemini-2.5-flash", contents: [question], config: { tools: [weather] } })
      )
      const call = first.functionCalls![0]!
      assert.strictEqual(call.name, "get_weather")
      assert.deepStrictEqual(call.args, { city: "Paris" })
      const second = yield* Effect.promise(() =>
        ai.models.generateContent({
          model: "gemini-2.5-flash",
          config: { tools: [weather] },
          contents: [
            question,
            first.candidates![0]!.content!,
            { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { forecast: "snow" } } }] }
          ]
        })
      )
      assert.include(second.text!, '{"forecast":"snow"}')
    })
  )

  it.effect("includeThoughts adds thought parts and thoughtsTokenCount", () =>
    Effect.gen(function* () {
      const ai = clientFor(yield* Simulator)
      const response = yield* Effect.promise(() =>
        ai.models.generateContent({
          model: "gemini-2.5-pro",
          contents: "Think first",
          config: { thinkingConfig: { includeThoughts: true } }
        })
      )
      const parts = response.candidates![0]!.content!.parts!
      assert.isTrue(parts[0]!.thought)
      assert.strictEqual(response.usageMetadata!.thoughtsTokenCount, countText(parts[0]!.text!))
      assert.strictEqual(
        response.usageMetadata!.totalTokenCount,
        response.usageMetadata!.promptTokenCount! +
          response.usageMetadata!.candidatesTokenCount! +
          response.usageMetadata!.thoughtsTokenCount!
      )
    })
  )

  it.effect("googleSearch: asked to search, groundingMetadata on the final candidate, JSON and streamed", () =>
    Effect.gen(function* () {
      const ai = clientFor(yield* Simulator)
      const request = {
        model: "gemini-2.5-flash",
        contents: "Please search the web for tollgate",
        config: { tools: [{ googleSearch: {} }] }
      }
      const response = yield* Effect.promise(() => ai.models.generateContent(request))
      const grounding = response.candidates![0]!.groundingMetadata!
      assert.strictEqual(grounding.webSearchQueries!.length, 1)
      assert.include(grounding.webSearchQueries![0], "tollgate")
      assert.match(grounding.groundingChunks![0]!.web!.uri!, /^https:\/\//)
      const chunks = yield* Effect.promise(async () => {
        const all = []
        for await (const chunk of await ai.models.generateContentStream(request)) all.push(chunk)
        return all
      })
      const grounded = chunks.filter((chunk) => chunk.candidates?.[0]?.groundingMetadata !== undefined)
      assert.deepStrictEqual(grounded, [chunks[chunks.length - 1]!])
      assert.deepStrictEqual(grounded[0]!.candidates![0]!.groundingMetadata, grounding)
      // Not asked to search: no grounding.
      const plain = yield* Effect.promise(() => ai.models.generateContent({ ...request, contents: "Hello" }))
      assert.isUndefined(plain.candidates![0]!.groundingMetadata)
    })
  )

  it.effect("googleSearch beside function declarations is refused, as Gemini models before Gemini 3 do", () =>
    Effect.gen(function* () {
      const ai = clientFor(yield* Simulator)
      const error = yield* Effect.promise(() =>
        ai.models
          .generateContent({
            model: "gemini-2.5-flash",
            contents: "x",
            config: { tools: [weather, { googleSearch: {} }] }
          })
          .then(
            () => undefined,
            (e: unknown) => e
          )
      )
      assert.instanceOf(error, ApiError)
      assert.strictEqual((error as ApiError).status, 400)
    })
  )

  it.effect("a wrong key is 400 INVALID_ARGUMENT, as Gemini answers it", () =>
    Effect.gen(function* () {
      const ai = clientFor(yield* Simulator, "wrong-key")
      const error = yield* Effect.promise(() =>
        ai.models.generateContent({ model: "gemini-2.5-flash", contents: "x" }).then(
          () => undefined,
          (e: unknown) => e
        )
      )
      assert.instanceOf(error, ApiError)
      assert.strictEqual((error as ApiError).status, 400)
      assert.include((error as ApiError).message, "API_KEY_INVALID")
    })
  )
})
