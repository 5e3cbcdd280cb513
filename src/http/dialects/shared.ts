/** What the three chat dialects share at the edge. */
import { Effect } from "effect"
import type { Tally } from "../../adapters/tokenizer/ChatTally.ts"
import type { DialectProblem } from "../../app/ports/ChatDialects.ts"
import type { ConvertError } from "../../plugins/text/convert/ChatIR.ts"

export const problem = (error: ConvertError): DialectProblem => ({ param: error.param, message: error.message })

/** A tally counted at once for a body of ordinary size; the rest of a big one in slices that yield between them. */
export const countTally = (tally: Tally, finish: (tally: Tally) => Effect.Effect<number>): Effect.Effect<number> =>
  tally.deferred === undefined ? Effect.succeed(tally.tokens) : finish(tally)
