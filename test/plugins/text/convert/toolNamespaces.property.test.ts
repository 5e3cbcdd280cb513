/**
 * Responses `namespace` tools flattened for every other upstream and mapped back: flat names never collide (with each
 * other or a plain tool), are valid function names on OpenAI, Anthropic and Gemini, and stand for exactly their
 * member; a call an upstream makes under a flat name reaches the client as `{namespace, name}` (JSON and streamed), and
 * the client's history with `namespace` goes upstream under the same flat name.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { irToAnthropicRequest } from "../../../../src/plugins/text/convert/anthropic.ts"
import { anthropicResponseToIR } from "../../../../src/plugins/text/convert/anthropicResponse.ts"
import { irToGeminiRequest } from "../../../../src/plugins/text/convert/gemini.ts"
import { geminiResponseToIR } from "../../../../src/plugins/text/convert/geminiResponse.ts"
import { irToOpenAIRequest } from "../../../../src/plugins/text/convert/openai.ts"
import { openAIResponseToIR } from "../../../../src/plugins/text/convert/openaiResponse.ts"
import { responsesRequestToIR } from "../../../../src/plugins/text/convert/responsesRequestToIR.ts"
import { irToResponsesResponse } from "../../../../src/plugins/text/convert/responsesResponse.ts"
import { makeStreamTransducer } from "../../../../src/plugins/text/convert/StreamTransducer.ts"
import { toolNamesOf } from "../../../../src/plugins/text/convert/toolNamespaces.ts"
import { anthropicEvents, ok, readFrames } from "./helpers.ts"

const VALID = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/

/** Names as clients write them: mostly plain identifiers, sometimes long, dotted, spaced or not ASCII at all. */
const aName = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/),
  fc.stringMatching(/^[a-zA-Z0-9_.:\- ]{1,80}$/),
  fc.string({ minLength: 1, maxLength: 70 })
)

const fn = (name: string) => ({ type: "function", name, parameters: { type: "object", properties: {} } })

/** A tool list: plain function tools, and namespaces whose members may share names with anything. */
const toolList = fc
  .record({
    plain: fc.uniqueArray(aName, { maxLength: 5 }),
    namespaces: fc.uniqueArray(
      fc.record({ name: aName, members: fc.uniqueArray(aName, { minLength: 1, maxLength: 4 }) }),
      { minLength: 1, maxLength: 4, selector: (n) => n.name }
    )
  })
  .chain((list) =>
    // Flat names that a plain tool already takes (the collision the suffix rule is for).
    fc.constantFrom(...list.namespaces).map((ns) => ({
      plain: [...new Set([...list.plain, `${ns.name}__${ns.members[0]}`])],
      namespaces: list.namespaces
    }))
  )

const toolsOf = (list: {
  plain: ReadonlyArray<string>
  namespaces: ReadonlyArray<{ name: string; members: ReadonlyArray<string> }>
}) => [
  ...list.plain.map(fn),
  ...list.namespaces.map((ns) => ({ type: "namespace", name: ns.name, description: "d", tools: ns.members.map(fn) }))
]

const members = (list: { namespaces: ReadonlyArray<{ name: string; members: ReadonlyArray<string> }> }) =>
  list.namespaces.flatMap((ns) => ns.members.map((name) => ({ namespace: ns.name, name })))

describe("namespace tools' flat names", () => {
  it("are valid everywhere, never collide, and stand for exactly their member", () => {
    fc.assert(
      fc.property(toolList, (list) => {
        const names = toolNamesOf(toolsOf(list))
        const flats = members(list).map((m) => names.flat(m.namespace, m.name))
        assert.strictEqual(new Set(flats).size, flats.length, "no two members share a flat name")
        for (const flat of flats) {
          assert.match(flat, VALID)
          assert.notInclude(list.plain, flat, "no member takes a plain tool's name")
        }
        members(list).forEach((member, i) => {
          assert.deepStrictEqual(names.namespaced(flats[i]), member)
        })
        for (const plain of list.plain) assert.isUndefined(names.namespaced(plain))
      })
    )
  })

  it("go upstream as function tools and come back as the member's call, on every upstream protocol", () => {
    fc.assert(
      fc.property(toolList, fc.nat(), (list, pick) => {
        const all = members(list)
        const called = all[pick % all.length]
        const body = {
          model: "m",
          tools: toolsOf(list),
          input: [
            { role: "user", content: "go" },
            {
              type: "function_call",
              call_id: "call_1",
              namespace: called.namespace,
              name: called.name,
              arguments: "{}"
            },
            { type: "function_call_output", call_id: "call_1", output: "done" },
            { role: "user", content: "again" }
          ]
        }
        const ir = ok(responsesRequestToIR(body))
        const flat = toolNamesOf(body.tools).flat(called.namespace, called.name)
        assert.deepStrictEqual(
          ir.tools.map((t) => t.name),
          [...list.plain, ...all.map((m) => toolNamesOf(body.tools).flat(m.namespace, m.name))]
        )
        const history = ir.messages[1]
        assert.strictEqual(
          history.role === "assistant" && history.content[0].type === "tool_call" ? history.content[0].name : undefined,
          flat
        )
        const anthropic = ok(irToAnthropicRequest(ir, { defaultMaxTokens: 100 }))
        const openai = ok(irToOpenAIRequest(ir))
        const gemini = ok(irToGeminiRequest(ir))
        assert.include(JSON.stringify(anthropic.tools), JSON.stringify(flat))
        assert.include(JSON.stringify(openai.tools), JSON.stringify(flat))
        assert.include(JSON.stringify(gemini.tools), JSON.stringify(flat))
        const replies = [
          anthropicResponseToIR({
            id: "msg_1",
            type: "message",
            role: "assistant",
            model: "m",
            content: [{ type: "tool_use", id: "toolu_1", name: flat, input: { a: 1 } }],
            stop_reason: "tool_use",
            usage: { input_tokens: 1, output_tokens: 1 }
          }),
          openAIResponseToIR({
            id: "c",
            object: "chat.completion",
            model: "m",
            choices: [
              {
                index: 0,
                message: {
                  role: "assistant",
                  content: null,
                  tool_calls: [{ id: "call_2", type: "function", function: { name: flat, arguments: '{"a":1}' } }]
                },
                finish_reason: "tool_calls"
              }
            ],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
          }),
          geminiResponseToIR(
            {
              candidates: [{ content: { role: "model", parts: [{ functionCall: { name: flat, args: { a: 1 } } }] } }],
              usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 }
            },
            { fallbackId: "g", fallbackModel: "m" }
          )
        ]
        for (const reply of replies) {
          const response = irToResponsesResponse(ok(reply), { id: "resp_1", model: "m", createdAt: 1 }, body)
          const item = (response.output as ReadonlyArray<Record<string, unknown>>)[0]
          assert.strictEqual(item.type, "function_call")
          assert.strictEqual(item.namespace, called.namespace)
          assert.strictEqual(item.name, called.name)
          assert.strictEqual(item.arguments, '{"a":1}')
        }
        // Streamed: the item the client sees added and done carries the member's namespace and name.
        const transducer = makeStreamTransducer({
          upstream: "anthropic",
          client: "responses",
          created: 1,
          fallbackId: "f",
          fallbackModel: "m",
          clientBody: body
        })
        const events = anthropicEvents([
          {
            type: "message_start",
            message: {
              id: "msg_1",
              type: "message",
              role: "assistant",
              model: "m",
              content: [],
              usage: { input_tokens: 1, output_tokens: 0 }
            }
          },
          {
            type: "content_block_start",
            index: 0,
            content_block: { type: "tool_use", id: "toolu_1", name: flat, input: {} }
          },
          { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"a":1}' } },
          { type: "content_block_stop", index: 0 },
          { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 3 } },
          { type: "message_stop" }
        ])
        const frames = readFrames([...events.flatMap((e) => transducer.push(e)), ...transducer.end()])
        const items = frames.flatMap((f) => {
          const data = f.data as Record<string, unknown>
          return data.type === "response.output_item.added" || data.type === "response.output_item.done"
            ? [data.item as Record<string, unknown>]
            : []
        })
        assert.strictEqual(items.length, 2)
        for (const item of items) {
          assert.strictEqual(item.namespace, called.namespace)
          assert.strictEqual(item.name, called.name)
        }
      }),
      { numRuns: 150 }
    )
  })
})
