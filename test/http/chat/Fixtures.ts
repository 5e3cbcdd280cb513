/** Shared prompts and tools for the chat matrix, with the simulator's deterministic answers to them. */
import { assert } from "@effect/vitest"
import type { RecordedCall, RunningSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"

/** Wire JSON as the tests read it: loosely, any field at any depth (a missing one reads as undefined). */
// biome-ignore lint/suspicious/noExplicitAny: one alias for reading arbitrary wire JSON in assertions
export type Wire = any

export const HELLO = "Hello from the matrix"
export const WEATHER_PROMPT = "What is the weather in Paris? Use the get_weather tool."
export const TOOL_RESULT = '{"temperature":21,"unit":"celsius"}'
export const ANTHROPIC_TOOL_ID = /^[a-zA-Z0-9_-]+$/

export const weatherSchema = {
  type: "object" as const,
  properties: { city: { type: "string" } },
  required: ["city"]
}

/** The simulator echoes the prompt, and answers a tool result by quoting it. */
export const assertEcho = (text: string | null | undefined) => assert.match(text ?? "", /^Echo: Hello from the matrix/)
export const assertToolAnswer = (text: string | null | undefined) => assert.include(text ?? "", "The tool returned: ")

const last = (sim: RunningSimulator): RecordedCall => {
  const calls = sim.calls()
  return calls[calls.length - 1]
}

/**
 * What the upstream received on the second turn: the call id it issued came back, on both the call and its result,
 * in the upstream's own shape.
 */
export const assertUpstreamToolIds = (sim: RunningSimulator) => {
  const call = last(sim)
  const body = call.body as Record<string, Wire>
  if (call.path === "/v1/messages") {
    const uses = body.messages.flatMap((m: Wire) =>
      Array.isArray(m.content) ? m.content.filter((b: Wire) => b.type === "tool_use") : []
    )
    const results = body.messages.flatMap((m: Wire) =>
      Array.isArray(m.content) ? m.content.filter((b: Wire) => b.type === "tool_result") : []
    )
    assert.strictEqual(uses.length, 1)
    assert.match(uses[0].id, ANTHROPIC_TOOL_ID)
    assert.deepStrictEqual(
      results.map((r: Wire) => r.tool_use_id),
      [uses[0].id]
    )
    return uses[0].id as string
  }
  if (call.path === "/v1/chat/completions") {
    const assistant = body.messages.find((m: Wire) => m.role === "assistant")
    const tool = body.messages.find((m: Wire) => m.role === "tool")
    assert.strictEqual(tool.tool_call_id, assistant.tool_calls[0].id)
    return assistant.tool_calls[0].id as string
  }
  const parts = body.contents.flatMap((c: Wire) => c.parts)
  const call0 = parts.find((p: Wire) => p.functionCall !== undefined)
  const response = parts.find((p: Wire) => p.functionResponse !== undefined)
  assert.strictEqual(call0.functionCall.name, "get_weather")
  assert.strictEqual(response.functionResponse.name, "get_weather")
  return String(call0.functionCall.id ?? "")
}

export const lastUpstreamBody = (sim: RunningSimulator): Record<string, Wire> => last(sim).body as Record<string, Wire>
