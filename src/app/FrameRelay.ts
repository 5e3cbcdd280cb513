/**
 * A streamed chat reply's frames as the client is to see them: plain synchronous code, called once per network read.
 * Every upstream event goes through the stream transducer, which converts it to the client's protocol and keeps what
 * the billing needs. When the client speaks the upstream's protocol, the upstream's own bytes are forwarded instead
 * (unknown fields preserved) and the transducer only counts (it encodes only when the stream fails or its finished
 * object is asked for); the model name is swapped for the one the client named.
 */
import type { Dialect, SseFrame } from "../plugins/ModelPlugin.ts"
import { isRecord, parseJson, swapSoleModel } from "../plugins/text/convert/json.ts"
import { makeStreamTransducer, type StreamTransducer } from "../plugins/text/convert/StreamTransducer.ts"
import type { ChatInput } from "./ChatGateway.ts"
import type { ChatPlan } from "./ChatPlan.ts"
import { frameText } from "./ChatStreamAccounting.ts"
import type { ReplyContext } from "./ports/ChatDialects.ts"
import { randomUUID } from "node:crypto"

export class FrameRelay {
  readonly transducer: StreamTransducer
  private readonly passthrough: boolean
  /** OpenAI's usage chunk, asked of the upstream on the client's behalf, is shown only when the client asked too. */
  private readonly dropUsageChunk: boolean
  private readonly context: ReplyContext
  /** The whole response as the upstream's own terminal event gave it (same protocol). */
  private nativeFinal: Readonly<Record<string, unknown>> | undefined

  constructor(
    private readonly plan: ChatPlan,
    input: ChatInput,
    upstream: Dialect,
    created: number
  ) {
    this.passthrough = upstream === input.dialect
    const includeUsage =
      input.dialect === "openai" &&
      isRecord(input.body.stream_options) &&
      input.body.stream_options.include_usage === true
    this.dropUsageChunk = input.dialect === "openai" && !includeUsage
    this.context = { body: input.body, responseId: input.responseId, model: plan.modelId, created }
    this.transducer = makeStreamTransducer({
      upstream,
      client: input.dialect,
      created,
      fallbackId: `msg_${randomUUID().replaceAll("-", "")}`,
      fallbackModel: plan.modelId,
      clientModel: plan.modelId,
      includeUsage,
      inputTokens: plan.inputTokens,
      clientBody: input.body,
      // Passed through, the upstream's own bytes are written: the transducer need not encode them again.
      deferEncoding: this.passthrough,
      ...(input.responseId === undefined ? {} : { clientId: input.responseId })
    })
  }

  /** Frames that arrived together (one network read), converted together and written in one piece. */
  readonly batch = (frames: ReadonlyArray<SseFrame>): string => {
    let text = ""
    for (const frame of frames) for (const converted of this.frame(frame)) text += converted
    return text
  }

  /** What the client's protocol still needs once the upstream's stream ended (nothing when passed through). */
  readonly end = (): string => {
    const tail = this.transducer.end() // also marks the snapshot finished for accounting
    return this.passthrough ? "" : tail.join("")
  }

  /** The client's protocol's own error ending, for a stream the upstream cut. */
  readonly fail = (message: string): string => this.transducer.fail("api_error", message).join("")

  /** The finished response: the upstream's own terminal object when it sent one, else the transducer's. */
  readonly final = (): Readonly<Record<string, unknown>> | undefined =>
    (this.passthrough ? this.nativeFinal : undefined) ?? this.transducer.snapshot().final

  private frame(frame: SseFrame): ReadonlyArray<string> {
    const data = frame.data === "[DONE]" ? "[DONE]" : parseJson(frame.data)
    const converted = this.transducer.push({ ...(frame.event === undefined ? {} : { event: frame.event }), data })
    if (!this.passthrough) return converted
    if (!isRecord(data)) return [frameText(frame)]
    const presented = this.plan.client.present?.(data, this.context)
    if (presented !== undefined) {
      if (presented.final !== undefined) this.nativeFinal = presented.final
      return [frameText({ event: frame.event, data: JSON.stringify(presented.shown) })]
    }
    if (this.dropUsageChunk && isUsageChunk(data)) return []
    return [frameText({ event: frame.event, data: this.withClientModel(frame.data, data) })]
  }

  /**
   * The client's model name in place of the upstream's: in the text itself when that is unambiguous (no
   * re-serialization per chunk), else on the parsed value.
   */
  private withClientModel(text: string, data: Readonly<Record<string, unknown>>): string {
    const model = this.plan.modelId
    if (typeof data.model === "string")
      return swapSoleModel(text, data.model, model) ?? JSON.stringify({ ...data, model })
    if (isRecord(data.message) && typeof data.message.model === "string") {
      return (
        swapSoleModel(text, data.message.model, model) ??
        JSON.stringify({ ...data, message: { ...data.message, model } })
      )
    }
    return text
  }
}

/** OpenAI's usage chunk: no choices (only an OpenAI chat stream's chunks have a `choices` array). */
const isUsageChunk = (data: Readonly<Record<string, unknown>>) =>
  Array.isArray(data.choices) && data.choices.length === 0
