import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { UpstreamEvent } from "../../../../src/plugins/text/convert/ChatStream.ts"
import {
  DEFERRED_EVENTS,
  type Dialect,
  makeStreamTransducer
} from "../../../../src/plugins/text/convert/StreamTransducer.ts"
import { readFrames } from "./helpers.ts"

const fragment = fc.constantFrom("", "{", '{"a":', "1}", '"x"', "}", "{}", "[1,", "null", "ü")
const smallIndex = fc.integer({ min: -1, max: 3 })
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything(),
  fc.json().map((s) => JSON.parse(s) as unknown)
)

const anthropicEvent: fc.Arbitrary<UpstreamEvent> = fc.oneof(
  fc.record({ id: fc.string(), model: fc.string(), input_tokens: fc.nat() }).map(({ id, model, input_tokens }) => ({
    event: "message_start",
    data: { type: "message_start", message: { id, model, usage: { input_tokens, output_tokens: 1 } } }
  })),
  fc
    .record({
      index: smallIndex,
      block: fc.oneof(
        fc.constant({ type: "text", text: "" }),
        fc.constant({ type: "thinking", thinking: "", signature: "" }),
        fc.record({ type: fc.constant("tool_use"), id: fc.string(), name: fc.string(), input: fc.constant({}) }),
        fc.constant({ type: "redacted_thinking", data: "xx" }),
        fc.constant({ type: "server_tool_use", id: "s", name: "web_search", input: {} })
      )
    })
    .map(({ index, block }) => ({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: block }
    })),
  fc
    .record({
      index: smallIndex,
      delta: fc.oneof(
        fc.string().map((text) => ({ type: "text_delta", text })),
        fc.string().map((thinking) => ({ type: "thinking_delta", thinking })),
        fc.string().map((signature) => ({ type: "signature_delta", signature })),
        fragment.map((partial_json) => ({ type: "input_json_delta", partial_json })),
        junk.map((citation) => ({ type: "citations_delta", citation }))
      )
    })
    .map(({ index, delta }) => ({ event: "content_block_delta", data: { type: "content_block_delta", index, delta } })),
  smallIndex.map((index) => ({ event: "content_block_stop", data: { type: "content_block_stop", index } })),
  fc
    .record({ stop: fc.constantFrom("end_turn", "tool_use", "max_tokens", "new_reason", null), out: fc.nat() })
    .map(({ stop, out }) => ({
      event: "message_delta",
      data: { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: out } }
    })),
  fc.constant({ event: "message_stop", data: { type: "message_stop" } }),
  fc.constant({ event: "ping", data: { type: "ping" } }),
  fc.constant({ event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } }),
  fc.record({ event: fc.option(fc.string(), { nil: undefined }), data: junk })
)

const openAIEvent: fc.Arbitrary<UpstreamEvent> = fc.oneof(
  fc
    .record({
      content: fc.option(fc.string(), { nil: undefined }),
      reasoning_content: fc.option(fc.string(), { nil: undefined }),
      tool_calls: fc.option(
        fc.array(
          fc.record(
            {
              index: fc.integer({ min: 0, max: 2 }),
              id: fc.constantFrom("call_a", "call_b", "functions.x:0", ""),
              type: fc.constant("function"),
              function: fc.record({ name: fc.constantFrom("f", "g", ""), arguments: fragment }, { requiredKeys: [] })
            },
            { requiredKeys: ["function"] }
          ),
          { maxLength: 3 }
        ),
        { nil: undefined }
      ),
      finish_reason: fc.constantFrom(null, "stop", "tool_calls", "length", "content_filter", "weird")
    })
    .map(({ finish_reason, ...delta }) => ({
      data: { id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta, finish_reason }] }
    })),
  fc.nat().map((n) => ({
    data: {
      id: "chatcmpl-1",
      model: "m",
      choices: [],
      usage: { prompt_tokens: n, completion_tokens: n, total_tokens: 2 * n }
    }
  })),
  fc.constant({ data: "[DONE]" }),
  fc.constant({ data: { error: { message: "boom", type: "server_error", param: null, code: null } } }),
  fc.record({ event: fc.option(fc.string(), { nil: undefined }), data: junk })
)

const geminiEvent: fc.Arbitrary<UpstreamEvent> = fc.oneof(
  fc
    .record({
      parts: fc.array(
        fc.oneof(
          fc.string().map((text) => ({ text })),
          fc.string().map((text) => ({ text, thought: true })),
          fc.record({ name: fc.string(), args: junk }, { requiredKeys: [] }).map((functionCall) => ({ functionCall }))
        ),
        { maxLength: 3 }
      ),
      finishReason: fc.option(fc.constantFrom("STOP", "MAX_TOKENS", "SAFETY", "NEW"), { nil: undefined }),
      usage: fc.option(fc.nat(), { nil: undefined }),
      // Google Search grounding, well-formed or not.
      grounding: fc.option(
        fc.oneof(
          fc.record({
            webSearchQueries: fc.array(fc.string(), { maxLength: 3 }),
            groundingChunks: fc.array(fc.record({ web: fc.record({ uri: fc.string(), title: fc.string() }) }), {
              maxLength: 3
            })
          }),
          junk
        ),
        { nil: undefined }
      )
    })
    .map(({ parts, finishReason, usage, grounding }) => ({
      data: {
        candidates: [
          {
            content: { role: "model", parts },
            ...(finishReason ? { finishReason } : {}),
            ...(grounding === undefined ? {} : { groundingMetadata: grounding }),
            index: 0
          }
        ],
        ...(usage === undefined ? {} : { usageMetadata: { promptTokenCount: usage, candidatesTokenCount: usage } })
      }
    })),
  fc.constant({ data: { error: { code: 503, message: "unavailable", status: "UNAVAILABLE" } } }),
  fc.record({ event: fc.option(fc.string(), { nil: undefined }), data: junk })
)

const responsesItem = fc.oneof(
  fc.record({ type: fc.constant("message"), id: fc.string() }),
  fc.record({
    type: fc.constant("reasoning"),
    id: fc.string(),
    encrypted_content: fc.option(fc.string(), { nil: undefined })
  }),
  fc.record({
    type: fc.constant("function_call"),
    id: fc.string(),
    call_id: fc.string(),
    name: fc.string(),
    arguments: fragment
  }),
  fc.record({ type: fc.constant("web_search_call"), id: fc.string() })
)
const responsesEvent: fc.Arbitrary<UpstreamEvent> = fc
  .oneof(
    fc.record({
      type: fc.constantFrom("response.created", "response.in_progress"),
      response: fc.record({ id: fc.string(), model: fc.string() })
    }),
    fc.record({
      type: fc.constantFrom("response.output_item.added", "response.output_item.done"),
      output_index: smallIndex,
      item: responsesItem
    }),
    fc.record({
      type: fc.constantFrom(
        "response.output_text.delta",
        "response.refusal.delta",
        "response.reasoning_summary_text.delta",
        "response.function_call_arguments.delta"
      ),
      delta: fc.oneof(fc.string(), fragment)
    }),
    fc.record({ type: fc.constant("response.reasoning_summary_part.added"), summary_index: smallIndex }),
    fc.record({
      type: fc.constantFrom("response.completed", "response.incomplete", "response.failed"),
      response: fc.record(
        {
          status: fc.constantFrom("completed", "incomplete", "failed", "weird"),
          usage: fc.record({ input_tokens: fc.nat(), output_tokens: fc.nat() }),
          error: fc.constant({ code: "server_error", message: "x" })
        },
        { requiredKeys: ["status"] }
      )
    }),
    fc.record({ type: fc.constant("error"), code: fc.string(), message: fc.string() }),
    junk
  )
  .map((data) => ({
    ...(typeof data === "object" && data !== null && "type" in data ? { event: String(data.type) } : {}),
    data
  }))

const upstreamEvents: Record<Dialect, fc.Arbitrary<ReadonlyArray<UpstreamEvent>>> = {
  responses: fc.array(responsesEvent, { maxLength: 25 }),
  anthropic: fc.array(anthropicEvent, { maxLength: 25 }),
  openai: fc.array(openAIEvent, { maxLength: 25 }),
  gemini: fc.array(geminiEvent, { maxLength: 12 })
}

/** Client-visible invariants for each dialect. */
const checkClientStream = (client: Dialect, frames: ReadonlyArray<string>) => {
  const parsed = readFrames(frames)
  if (client === "openai") {
    const done = parsed.findIndex((f) => f.data === "[DONE]")
    const errors = parsed.filter((f) => typeof f.data === "object" && f.data !== null && "error" in f.data)
    assert.isTrue(done === -1 || done === parsed.length - 1, "[DONE] is last")
    assert.isTrue(errors.length === 0 || (done === -1 && "error" in (parsed[parsed.length - 1].data as object)))
    assert.isTrue(done !== -1 || errors.length === 1, "a stream ends with [DONE] or one error")
  } else if (client === "anthropic") {
    const names = parsed.map((f) => f.event)
    const errorAt = names.indexOf("error")
    assert.isTrue(errorAt === -1 || errorAt === names.length - 1, "error is terminal")
    if (errorAt === -1) {
      assert.strictEqual(names[0], "message_start")
      assert.deepStrictEqual(names.slice(-2), ["message_delta", "message_stop"])
    }
    assert.isAtMost(names.filter((n) => n === "message_start").length, 1)
    let open: number | undefined
    let next = 0
    for (const f of parsed) {
      const data = f.data as { type: string; index?: number }
      assert.strictEqual(f.event, data.type)
      if (data.type === "content_block_start") {
        assert.strictEqual(open, undefined, "one block open at a time")
        assert.strictEqual(data.index, next++)
        open = data.index
      } else if (data.type === "content_block_delta") assert.strictEqual(data.index, open)
      else if (data.type === "content_block_stop") {
        assert.strictEqual(data.index, open)
        open = undefined
      } else if (data.type === "message_delta") assert.strictEqual(open, undefined, "blocks close before the end")
    }
  } else if (client === "responses") {
    // Numbered from 0 without gaps, named as their type, opened with response.created, ended by one terminal event.
    const types = parsed.map((f) => (f.data as { type: string }).type)
    parsed.forEach((f, i) => {
      const data = f.data as { type: string; sequence_number: number }
      assert.strictEqual(data.sequence_number, i)
      assert.strictEqual(f.event, data.type)
    })
    const terminal = types.filter(
      (t) => t === "response.completed" || t === "response.incomplete" || t === "response.failed"
    )
    assert.strictEqual(terminal.length, 1, "exactly one terminal event")
    assert.strictEqual(terminal[0], types.at(-1), "the terminal event is last")
    if (types[0] !== "response.failed") assert.strictEqual(types[0], "response.created")
    let open: number | undefined
    for (const f of parsed) {
      const data = f.data as { type: string; output_index?: number }
      if (data.type === "response.output_item.added") {
        assert.strictEqual(open, undefined, "one item open at a time")
        open = data.output_index
      } else if (data.type === "response.output_item.done") {
        assert.strictEqual(data.output_index, open)
        open = undefined
      } else if (data.output_index !== undefined) assert.strictEqual(data.output_index, open)
    }
  } else {
    assert.isTrue(parsed.every((f) => f.event === undefined))
  }
}

const dialects: ReadonlyArray<Dialect> = ["openai", "anthropic", "gemini", "responses"]

describe("stream transducers on arbitrary upstream events", () => {
  for (const upstream of dialects) {
    for (const client of dialects) {
      it(`property: ${upstream} → ${client} never throws and keeps the client protocol well-formed`, () => {
        fc.assert(
          fc.property(upstreamEvents[upstream], fc.boolean(), (events, includeUsage) => {
            const transducer = makeStreamTransducer({
              upstream,
              client,
              created: 1,
              fallbackId: "fallback",
              fallbackModel: "model",
              includeUsage
            })
            const frames = [...events.flatMap((e) => transducer.push(e)), ...transducer.end()]
            checkClientStream(client, frames)
            assert.deepStrictEqual(transducer.end(), [], "nothing after the terminal frame")
            const snapshot = transducer.snapshot()
            assert.isTrue(snapshot.finished)
            const text = frames.join("")
            for (const piece of [snapshot.delivered.text, snapshot.delivered.thinking]) {
              if (piece !== "") assert.isTrue(text.length > 0)
            }
          }),
          { numRuns: 300 }
        )
      })
    }
  }
})

describe("a transducer that defers encoding (a passed-through stream)", () => {
  const options = (dialect: Dialect, includeUsage: boolean) => ({
    upstream: dialect,
    client: dialect,
    created: 1,
    fallbackId: "fallback",
    fallbackModel: "model",
    clientModel: "alias",
    includeUsage
  })
  for (const dialect of dialects) {
    it(`property: ${dialect} → ${dialect} accounts, fails and finishes exactly as one that encodes every event`, () => {
      fc.assert(
        fc.property(
          upstreamEvents[dialect],
          fc.boolean(),
          fc.boolean(),
          fc.nat({ max: 3 }),
          (events, includeUsage, cut, repeat) => {
            // Repeated, some runs pass the deferral's bound and encode in the middle of the stream.
            const stream = Array.from({ length: 1 + repeat * 300 }, () => events).flat()
            const encoding = makeStreamTransducer(options(dialect, includeUsage))
            const deferring = makeStreamTransducer({ ...options(dialect, includeUsage), deferEncoding: true })
            stream.forEach((event, i) => {
              encoding.push(event)
              assert.deepStrictEqual(deferring.push(event), [], "nothing to write: the upstream's bytes are")
              if (i % 64 === 0) assert.deepStrictEqual(deferring.snapshot(), encoding.snapshot())
            })
            if (cut) {
              assert.deepStrictEqual(
                deferring.fail("api_error", "cut"),
                encoding.fail("api_error", "cut"),
                "the in-band error ending is the encoder's, in the state every event left it"
              )
            } else {
              encoding.end()
              deferring.end()
            }
            assert.deepStrictEqual(deferring.snapshot(), encoding.snapshot())
          }
        ),
        { numRuns: 100 }
      )
    })
  }

  it("counts what a long passed-through stream delivered past the deferral bound", () => {
    const deferring = makeStreamTransducer({ ...options("openai", false), deferEncoding: true })
    const chunk = {
      data: { id: "c", model: "m", choices: [{ index: 0, delta: { content: "x" }, finish_reason: null }] }
    }
    for (let i = 0; i < DEFERRED_EVENTS * 3; i++) deferring.push(chunk)
    assert.strictEqual(deferring.snapshot().delivered.text.length, DEFERRED_EVENTS * 3)
  })
})
