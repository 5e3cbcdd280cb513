/**
 * What the chat pipeline knows about a stream it is relaying, for billing: the usage of what was delivered when the
 * upstream never reported its own, and the running cost a long stream records with its hold's lease.
 */
import type { SseFrame } from "../plugins/ModelPlugin.ts"
import { emptyUsage, type Usage } from "../plugins/text/convert/ChatIR.ts"
import type { StreamTransducer } from "../plugins/text/convert/StreamTransducer.ts"
import type { Progress } from "./LiveHolds.ts"

export const frameText = (frame: SseFrame): string =>
  frame.event === undefined ? `data: ${frame.data}\n\n` : `event: ${frame.event}\ndata: ${frame.data}\n\n`

/** Usage for a stream that ended without the upstream's count: the tokenizer's count of what was delivered. */
export const deliveredUsage = (
  transducer: StreamTransducer,
  inputTokens: number,
  count: (text: string) => number
): Usage => {
  const { delivered } = transducer.snapshot()
  return {
    ...emptyUsage,
    inputTokens,
    outputTokens: count(delivered.text) + count(delivered.thinking) + count(delivered.toolArguments)
  }
}

/**
 * A stream's progress for its hold's lease: the tokenizer's count of what was delivered so far, priced. Each reading
 * counts only the text added since the last one, cut before its last space so that words are counted whole (the
 * same count as the text in one piece, give or take the word still arriving).
 */
export const progressOf = (
  transducer: StreamTransducer,
  inputTokens: number,
  price: (usage: Usage) => bigint,
  count: (text: string) => number
): (() => Progress) => {
  const counted = { text: 0, thinking: 0, toolArguments: 0 }
  let outputTokens = 0
  return () => {
    const { delivered } = transducer.snapshot()
    for (const field of ["text", "thinking", "toolArguments"] as const) {
      const text = delivered[field]
      const from = counted[field]
      const space = text.lastIndexOf(" ")
      const to = space > from ? space : text.length - from > 4096 ? text.length : from
      if (to > from) {
        outputTokens += count(text.slice(from, to))
        counted[field] = to
      }
    }
    const usage = { ...emptyUsage, inputTokens, outputTokens }
    return { cost: price(usage), usage: { ...usage, estimated: true } }
  }
}

/** What a stream that ends now is billed: undefined when nothing reached the client (then it costs nothing). */
export const billOf = (
  transducer: StreamTransducer,
  inputTokens: number,
  price: (usage: Usage) => bigint,
  count: (text: string) => number
): { readonly cost: bigint; readonly usage: Usage & { readonly estimated: boolean } } | undefined => {
  const snapshot = transducer.snapshot()
  if (!hasDelivered(transducer) && snapshot.usage === undefined) return undefined
  const complete = snapshot.usage !== undefined && snapshot.finished && !snapshot.truncated
  const usage =
    complete && snapshot.usage !== undefined ? snapshot.usage : deliveredUsage(transducer, inputTokens, count)
  return { cost: price(usage), usage: { ...usage, estimated: !complete } }
}

export const hasDelivered = (transducer: StreamTransducer): boolean => {
  const { delivered } = transducer.snapshot()
  return delivered.text.length + delivered.thinking.length + delivered.toolArguments.length > 0
}
