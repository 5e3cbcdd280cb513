/**
 * A hosted web search run as Gemini's Google Search grounding: the request gets a `googleSearch` tool (unless function
 * tools are beside it), and the candidate's `groundingMetadata` comes back as one WebSearch per query with the pages
 * it grounded on, counted in the usage, JSON and streamed (where it arrives on the final chunk), for a Responses
 * client as `web_search_call` items.
 */
import { assert, describe, it } from "@effect/vitest"
import { irToGeminiRequest } from "../../../../src/plugins/text/convert/gemini.ts"
import { geminiResponseToIR } from "../../../../src/plugins/text/convert/geminiResponse.ts"
import { responsesRequestToIR } from "../../../../src/plugins/text/convert/responsesRequestToIR.ts"
import { makeStreamTransducer } from "../../../../src/plugins/text/convert/StreamTransducer.ts"
import { ok, readFrames } from "./helpers.ts"

const body = { model: "m", input: "search for tollgate", tools: [{ type: "web_search" }], stream: true }

const groundingMetadata = {
  webSearchQueries: ["tollgate gateway", "tollgate ledger"],
  searchEntryPoint: { renderedContent: "<div></div>" },
  groundingChunks: [
    { web: { uri: "https://example.com/a", title: "A" } },
    { web: { uri: "https://example.com/b" } },
    { retrievedContext: { uri: "gs://x" } }
  ],
  groundingSupports: []
}

const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 }

const sources = [{ url: "https://example.com/a", title: "A" }, { url: "https://example.com/b" }]

describe("Google Search grounding for a hosted web_search", () => {
  it("the request carries googleSearch, unless function tools are beside it", () => {
    const request = ok(irToGeminiRequest(ok(responsesRequestToIR(body))))
    assert.deepStrictEqual(request.tools, [{ googleSearch: {} }])
    const tool = { type: "function", name: "f", parameters: { type: "object" } }
    const both = ok(irToGeminiRequest(ok(responsesRequestToIR({ ...body, tools: [...body.tools, tool] }))))
    assert.deepStrictEqual(
      (both.tools as ReadonlyArray<Record<string, unknown>>).map((t) => Object.keys(t)),
      [["functionDeclarations"]]
    )
    const plain = ok(irToGeminiRequest(ok(responsesRequestToIR({ ...body, tools: [] }))))
    assert.isUndefined(plain.tools)
  })

  it("JSON: one search per query, each with the grounding pages, counted in the usage", () => {
    const response = ok(
      geminiResponseToIR(
        {
          responseId: "r1",
          modelVersion: "m",
          candidates: [
            { content: { role: "model", parts: [{ text: "Found it" }] }, finishReason: "STOP", groundingMetadata }
          ],
          usageMetadata
        },
        { fallbackId: "f", fallbackModel: "m" }
      )
    )
    assert.deepStrictEqual(
      response.webSearches?.map((s) => [s.query, s.sources]),
      [
        ["tollgate gateway", sources],
        ["tollgate ledger", sources]
      ]
    )
    assert.strictEqual(response.usage.webSearches, 2)
    assert.deepStrictEqual(response.content, [{ type: "text", text: "Found it" }])
  })

  it("JSON without grounding: no searches, none counted", () => {
    const response = ok(
      geminiResponseToIR(
        { candidates: [{ content: { parts: [{ text: "Hi" }] }, finishReason: "STOP" }], usageMetadata },
        { fallbackId: "f", fallbackModel: "m" }
      )
    )
    assert.isUndefined(response.webSearches)
    assert.isUndefined(response.usage.webSearches)
  })

  it("streamed to a Responses client: web_search_call items from the final chunk, the count in the usage", () => {
    const transducer = makeStreamTransducer({
      upstream: "gemini",
      client: "responses",
      created: 1,
      fallbackId: "f",
      fallbackModel: "m",
      clientBody: body
    })
    const chunk = (candidate: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      data: { responseId: "r1", modelVersion: "m", candidates: [{ index: 0, ...candidate }], ...extra }
    })
    const events = [
      chunk({ content: { role: "model", parts: [{ text: "Found " }] } }),
      chunk(
        { content: { role: "model", parts: [{ text: "it" }] }, finishReason: "STOP", groundingMetadata },
        { usageMetadata }
      )
    ]
    const frames = readFrames([...events.flatMap((e) => transducer.push(e)), ...transducer.end()])
    const data = frames.map((f) => f.data as Record<string, Record<string, unknown>>)
    const done = data.filter((d) => (d.type as unknown) === "response.output_item.done").map((d) => d.item)
    assert.deepStrictEqual(
      done.map((item) => item.type),
      ["message", "web_search_call", "web_search_call"]
    )
    assert.deepStrictEqual(done[1].action, {
      type: "search",
      query: "tollgate gateway",
      sources: sources.map((s) => ({ type: "url", url: s.url }))
    })
    const completed = data.find((d) => (d.type as unknown) === "response.completed")
    assert.deepStrictEqual(
      ((completed?.response.output ?? []) as ReadonlyArray<Record<string, unknown>>).map((item) => item.type),
      ["message", "web_search_call", "web_search_call"],
      "the final response lists the searches too"
    )
    assert.strictEqual(transducer.snapshot().usage?.webSearches, 2)
  })
})
