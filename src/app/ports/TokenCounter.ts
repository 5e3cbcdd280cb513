/**
 * Token counts for holds and for billing streams that report none. A port: the gateways count through it and the
 * composition root provides the tokenizer adapter, so `app` never reaches the tokenizer's tables.
 */
import { Context, type Effect } from "effect"

export class TokenCounter extends Context.Service<
  TokenCounter,
  {
    /** Tokens of one text, counted at once: prompts and delivered output, which are small. */
    readonly count: (text: string) => number
    /** Tokens of many texts; big ones counted in slices that leave the event loop free between them. */
    readonly countMany: (texts: ReadonlyArray<string>) => Effect.Effect<number>
  }
>()("tollgate/app/ports/TokenCounter") {}
