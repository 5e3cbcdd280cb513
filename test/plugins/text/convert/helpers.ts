import { assert } from "@effect/vitest"
import { Result } from "effect"
import type { ConvertError, Converted } from "../../../../src/plugins/text/convert/ChatIR.ts"
import type { UpstreamEvent } from "../../../../src/plugins/text/convert/ChatStream.ts"

export const ok = <A>(result: Converted<A>): A => {
  if (Result.isFailure(result)) assert.fail(`expected success, got ${result.failure.param}: ${result.failure.message}`)
  return result.success
}

export const failure = <A>(result: Converted<A>): ConvertError => {
  if (Result.isSuccess(result)) assert.fail("expected a ConvertError")
  return result.failure
}

/** Splits SSE frame text back into `{event, data}` records, the way a client reads it. */
export const readFrames = (frames: ReadonlyArray<string>): Array<{ event?: string; data: unknown }> =>
  frames.map((frame) => {
    assert.isTrue(frame.endsWith("\n\n"), `frame must end with a blank line: ${JSON.stringify(frame)}`)
    const lines = frame.trimEnd().split("\n")
    const event = lines.find((l) => l.startsWith("event: "))?.slice(7)
    const dataText = lines.find((l) => l.startsWith("data: "))?.slice(6) ?? ""
    const data = dataText === "[DONE]" ? "[DONE]" : JSON.parse(dataText)
    return event === undefined ? { data } : { event, data }
  })

export const anthropicEvents = (events: ReadonlyArray<Record<string, unknown>>): Array<UpstreamEvent> =>
  events.map((data) => ({ event: String(data.type), data }))

export const openAIChunks = (deltas: ReadonlyArray<Record<string, unknown>>, base = { id: "chatcmpl-1", model: "m" }) =>
  deltas.map((extra) => ({
    data: { ...base, object: "chat.completion.chunk", created: 1760000000, ...extra }
  }))
