/**
 * Signatures only count with the vendor that issued them (Anthropic answers 400 to any other, Gemini validates its
 * own), so whatever client carries a conversation between turns: no foreign signature may reach an upstream, and a
 * vendor's own signatures must come back to it unchanged wherever the client can carry them.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { irToAnthropicRequest } from "../../../../src/plugins/text/convert/anthropic.ts"
import { anthropicRequestToIR } from "../../../../src/plugins/text/convert/anthropicRequestToIR.ts"
import { irToAnthropicResponse } from "../../../../src/plugins/text/convert/anthropicResponse.ts"
import type { AssistantPart, ChatRequest, ChatResponse } from "../../../../src/plugins/text/convert/ChatIR.ts"
import { emptyUsage } from "../../../../src/plugins/text/convert/ChatIR.ts"
import { irToGeminiRequest } from "../../../../src/plugins/text/convert/gemini.ts"
import { geminiRequestToIR } from "../../../../src/plugins/text/convert/geminiRequestToIR.ts"
import { irToGeminiResponse } from "../../../../src/plugins/text/convert/geminiResponse.ts"
import { irToOpenAIRequest } from "../../../../src/plugins/text/convert/openai.ts"
import { openAIRequestToIR } from "../../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { irToOpenAIResponse } from "../../../../src/plugins/text/convert/openaiResponse.ts"
import { ok } from "./helpers.ts"

// biome-ignore lint/suspicious/noExplicitAny: wire JSON read loosely in assertions
type Wire = any
type Vendor = "anthropic" | "gemini" | "openai"
type Client = "anthropic" | "gemini" | "openai"

/** Signatures of each vendor look nothing like the rest of the conversation, so a leak is found by substring. */
const signature = (mark: "A" | "G") => fc.stringMatching(/^[a-zA-Z0-9+/]{6,24}={0,2}$/).map((s) => `${mark}SIG${s}`)
const words = fc.stringMatching(/^[a-z ]{1,12}$/)

interface Turn {
  readonly vendor: Vendor
  readonly reply: ChatResponse
  /** Signatures the vendor issued in this turn. */
  readonly thinkingSignature?: string
  readonly callSignatures: ReadonlyArray<string>
}

const turn = (index: number): fc.Arbitrary<Turn> =>
  fc
    .record({
      vendor: fc.constantFrom<Vendor>("anthropic", "gemini", "openai"),
      thinking: fc.option(words, { nil: undefined }),
      text: fc.option(words, { nil: undefined }),
      calls: fc.nat({ max: 2 }),
      anthropicSig: signature("A"),
      geminiSigs: fc.array(signature("G"), { minLength: 3, maxLength: 3 })
    })
    .map(({ vendor, thinking, text, calls, anthropicSig, geminiSigs }) => {
      const thinkingSignature =
        thinking === undefined
          ? undefined
          : vendor === "anthropic"
            ? anthropicSig
            : vendor === "gemini"
              ? geminiSigs[0]
              : undefined
      const callSignatures = vendor === "gemini" ? geminiSigs.slice(1, 1 + calls) : []
      const content: Array<AssistantPart> = [
        ...(thinking === undefined
          ? []
          : [
              thinkingSignature === undefined
                ? { type: "thinking" as const, text: thinking }
                : {
                    type: "thinking" as const,
                    text: thinking,
                    signature: thinkingSignature,
                    signatureOrigin: vendor === "gemini" ? ("gemini" as const) : ("anthropic" as const)
                  }
            ]),
        ...(text === undefined ? [] : [{ type: "text" as const, text }]),
        ...Array.from({ length: calls }, (_, c) => ({
          type: "tool_call" as const,
          id: `call_${index}_${c}`,
          name: "lookup",
          input: { n: c },
          ...(callSignatures[c] === undefined ? {} : { signature: callSignatures[c] })
        }))
      ]
      return {
        vendor,
        reply: {
          id: `r${index}`,
          model: "m",
          content,
          stopReason: calls > 0 ? "tool_use" : "end_turn",
          usage: emptyUsage
        },
        ...(thinkingSignature === undefined ? {} : { thinkingSignature }),
        callSignatures
      }
    })

const conversation = fc
  .integer({ min: 1, max: 3 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => turn(i))))

const wire = (value: unknown): Wire => JSON.parse(JSON.stringify(value))

/** What the client received for each turn, sent back the way its SDK keeps history, with an answer to every call. */
const clientRequest = (client: Client, turns: ReadonlyArray<Turn>): ChatRequest => {
  switch (client) {
    case "anthropic": {
      const messages: Array<Wire> = [{ role: "user", content: "hi" }]
      for (const t of turns) {
        const reply = wire(irToAnthropicResponse(t.reply))
        messages.push({ role: "assistant", content: reply.content })
        const uses = reply.content.filter((b: Wire) => b.type === "tool_use")
        messages.push({
          role: "user",
          content: [
            ...uses.map((b: Wire) => ({ type: "tool_result", tool_use_id: b.id, content: "42" })),
            { type: "text", text: "go on" }
          ]
        })
      }
      return ok(anthropicRequestToIR({ model: "m", max_tokens: 64, messages }))
    }
    case "openai": {
      const messages: Array<Wire> = [{ role: "user", content: "hi" }]
      for (const t of turns) {
        const message = wire(irToOpenAIResponse(t.reply, { created: 1 })).choices[0].message
        messages.push(message)
        for (const call of message.tool_calls ?? [])
          messages.push({ role: "tool", tool_call_id: call.id, content: "42" })
        messages.push({ role: "user", content: "go on" })
      }
      return ok(openAIRequestToIR({ model: "m", messages }))
    }
    case "gemini": {
      const contents: Array<Wire> = [{ role: "user", parts: [{ text: "hi" }] }]
      for (const t of turns) {
        const content = wire(irToGeminiResponse(t.reply)).candidates[0].content
        contents.push(content)
        const calls = content.parts.filter((p: Wire) => p.functionCall !== undefined)
        contents.push({
          role: "user",
          parts: [
            ...calls.map((p: Wire) => ({
              functionResponse: { id: p.functionCall.id, name: p.functionCall.name, response: { result: "42" } }
            })),
            { text: "go on" }
          ]
        })
      }
      return ok(geminiRequestToIR({ contents }, { model: "m", stream: false }))
    }
  }
}

const issued = (turns: ReadonlyArray<Turn>, vendor: Vendor) =>
  turns
    .filter((t) => t.vendor === vendor)
    .flatMap((t) => [...(t.thinkingSignature === undefined ? [] : [t.thinkingSignature]), ...t.callSignatures])

const allClients = fc.constantFrom<Client>("anthropic", "openai", "gemini")

describe("thinking signatures across vendors", () => {
  it("property: an Anthropic upstream only ever receives Anthropic's signatures, as issued", () => {
    fc.assert(
      fc.property(allClients, conversation, (client, turns) => {
        const body = wire(ok(irToAnthropicRequest(clientRequest(client, turns), { defaultMaxTokens: 4096 })))
        const text = JSON.stringify(body)
        assert.notInclude(text, "GSIG", "no Gemini signature")
        assert.notInclude(text, "gw1.", "no gateway envelope")
        assert.notInclude(text, "gts1.", "no packed tool id")
        const sent = body.messages.flatMap((m: Wire) =>
          Array.isArray(m.content)
            ? m.content.filter((b: Wire) => b.type === "thinking").map((b: Wire) => b.signature)
            : []
        )
        // Only an Anthropic client can carry a thinking block back; it then comes back unchanged, in order.
        assert.deepStrictEqual(sent, client === "anthropic" ? issued(turns, "anthropic") : [])
      }),
      { numRuns: 300 }
    )
  })

  it("property: a Gemini upstream only ever receives Gemini's signatures, each on the part it came with", () => {
    fc.assert(
      fc.property(allClients, conversation, (client, turns) => {
        const body = wire(ok(irToGeminiRequest(clientRequest(client, turns))))
        const text = JSON.stringify(body)
        assert.notInclude(text, "ASIG", "no Anthropic signature")
        assert.notInclude(text, "gw1.", "no gateway envelope")
        assert.notInclude(text, "gts1.", "no packed tool id")
        const parts = body.contents.filter((c: Wire) => c.role === "model").flatMap((c: Wire) => c.parts)
        const callSignatures = parts.filter((p: Wire) => p.functionCall).map((p: Wire) => p.thoughtSignature)
        const expectedCalls = turns.flatMap((t) =>
          t.reply.content.flatMap((p) => (p.type === "tool_call" ? [p.signature] : []))
        )
        // Every client carries a call's signature (in its id), so every call gets its own back.
        assert.deepStrictEqual(callSignatures, expectedCalls)
        const thoughtSignatures = parts.filter((p: Wire) => p.thought === true).map((p: Wire) => p.thoughtSignature)
        // An OpenAI client has nowhere to keep a thought's signature: those thoughts are not replayed.
        const expectedThoughts =
          client === "openai"
            ? []
            : turns.flatMap((t) => (t.vendor === "gemini" && t.thinkingSignature ? [t.thinkingSignature] : []))
        assert.deepStrictEqual(thoughtSignatures, expectedThoughts)
        // Calls and their responses still pair by id.
        const ids = parts.filter((p: Wire) => p.functionCall).map((p: Wire) => p.functionCall.id)
        const answered = body.contents
          .flatMap((c: Wire) => c.parts)
          .filter((p: Wire) => p.functionResponse)
          .map((p: Wire) => p.functionResponse.id)
        assert.deepStrictEqual(answered, ids)
      }),
      { numRuns: 300 }
    )
  })

  it("property: an OpenAI upstream receives no signature at all, and the call ids it issued", () => {
    fc.assert(
      fc.property(allClients, conversation, (client, turns) => {
        const body = wire(ok(irToOpenAIRequest(clientRequest(client, turns))))
        const text = JSON.stringify(body)
        for (const mark of ["ASIG", "GSIG", "gw1.", "gts1."]) assert.notInclude(text, mark)
        const ids = body.messages.flatMap((m: Wire) => (m.tool_calls ?? []).map((c: Wire) => c.id))
        assert.deepStrictEqual(
          ids,
          turns.flatMap((t) => t.reply.content.flatMap((p) => (p.type === "tool_call" ? [p.id] : [])))
        )
      }),
      { numRuns: 300 }
    )
  })
})
