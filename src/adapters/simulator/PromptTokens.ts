/**
 * Replies that carry the prompt's token count. The simulator runs inside the gateway's process by default, so a big
 * prompt must not hold the event loop while it is tokenized: its count runs in slices (the tokenizer's Effect, run
 * here at the simulator's Promise-based edge) and the reply is built once it is known.
 */
import { Effect } from "effect"
import { finishTally, type Tally } from "../tokenizer/ChatTally.ts"
import { type AsyncReply, asyncReply } from "./audio/AudioReply.ts"
import type { SimReply } from "./SimResponse.ts"

/** `build(count)` at once when the tally is complete, else an async reply that counts the rest in slices first. */
export const withPromptTokens = (tally: Tally, build: (promptTokens: number) => SimReply): SimReply | AsyncReply =>
  tally.deferred === undefined
    ? build(tally.tokens)
    : asyncReply(() => Effect.runPromise(finishTally(tally)).then(build))
