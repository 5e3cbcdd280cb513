/**
 * A hosted web search run as Anthropic's own: the request gets the `web_search_20250305` tool (capped at what the hold
 * covers), and the searches Anthropic ran (a `server_tool_use` with its query, then its `web_search_tool_result`) come
 * back as WebSearch entries with their count in the usage, JSON and streamed, for a Responses client as
 * `web_search_call` items.
 */
import { assert, describe, it } from "@effect/vitest"
import { irToAnthropicRequest } from "../../../../src/plugins/text/convert/anthropic.ts"
import { anthropicResponseToIR } from "../../../../src/plugins/text/convert/anthropicResponse.ts"
import { MAX_WEB_SEARCHES } from "../../../../src/plugins/text/convert/anthropicWebSearch.ts"
import { responsesRequestToIR } from "../../../../src/plugins/text/convert/responsesRequestToIR.ts"
import { makeStreamTransducer } from "../../../../src/plugins/text/convert/StreamTransducer.ts"
import { HELD_WEB_SEARCHES } from "../../../../src/plugins/text/TextPricing.ts"
import { anthropicEvents, ok, readFrames } from "./helpers.ts"

const body = { model: "m", input: "search for tollgate", tools: [{ type: "web_search" }], stream: true }

const searchBlocks = [
  { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "tollgate" } },
  {
    type: "web_search_tool_result",
    tool_use_id: "srvtoolu_1",
    content: [{ type: "web_search_result", url: "https://example.com/a", title: "A", encrypted_content: "x" }]
  }
]

describe("Anthropic's web search for a hosted web_search", () => {
  it("the request carries Anthropic's search tool, capped at the searches the hold covers", () => {
    const request = ok(irToAnthropicRequest(ok(responsesRequestToIR(body)), { defaultMaxTokens: 100 }))
    assert.deepStrictEqual(request.tools, [
      { type: "web_search_20250305", name: "web_search", max_uses: MAX_WEB_SEARCHES }
    ])
    assert.strictEqual(MAX_WEB_SEARCHES, HELD_WEB_SEARCHES)
    const plain = ok(irToAnthropicRequest(ok(responsesRequestToIR({ ...body, tools: [] })), { defaultMaxTokens: 100 }))
    assert.isUndefined(plain.tools)
  })

  it("JSON: the searches and their count come back", () => {
    const response = ok(
      anthropicResponseToIR({
        id: "msg_1",
        model: "m",
        content: [...searchBlocks, { type: "text", text: "Found it" }],
        stop_reason: "end_turn",
        usage: { input_tokens: 10, output_tokens: 5, server_tool_use: { web_search_requests: 1 } }
      })
    )
    assert.deepStrictEqual(response.webSearches, [
      { id: "srvtoolu_1", query: "tollgate", sources: [{ url: "https://example.com/a", title: "A" }] }
    ])
    assert.strictEqual(response.usage.webSearches, 1)
    assert.deepStrictEqual(response.content, [{ type: "text", text: "Found it" }])
  })

  it("streamed to a Responses client: a web_search_call item with the streamed query, the count in the usage", () => {
    const transducer = makeStreamTransducer({
      upstream: "anthropic",
      client: "responses",
      created: 1,
      fallbackId: "f",
      fallbackModel: "m",
      clientBody: body
    })
    const events = anthropicEvents([
      { type: "message_start", message: { id: "msg_1", model: "m", usage: { input_tokens: 10, output_tokens: 1 } } },
      { type: "content_block_start", index: 0, content_block: { ...searchBlocks[0], input: {} } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"query":' } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '"tollgate"}' } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: searchBlocks[1] },
      { type: "content_block_stop", index: 1 },
      { type: "content_block_start", index: 2, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 2, delta: { type: "text_delta", text: "Found it" } },
      { type: "content_block_stop", index: 2 },
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn" },
        usage: { output_tokens: 5, server_tool_use: { web_search_requests: 1 } }
      },
      { type: "message_stop" }
    ])
    const frames = readFrames([...events.flatMap((e) => transducer.push(e)), ...transducer.end()])
    const done = frames
      .map((f) => f.data as Record<string, Record<string, unknown>>)
      .filter((d) => (d.type as unknown) === "response.output_item.done")
      .map((d) => d.item)
    assert.deepStrictEqual(
      done.map((item) => item.type),
      ["web_search_call", "message"]
    )
    assert.deepStrictEqual(done[0].action, {
      type: "search",
      query: "tollgate",
      sources: [{ type: "url", url: "https://example.com/a" }]
    })
    assert.strictEqual(transducer.snapshot().usage?.webSearches, 1)
  })
})
