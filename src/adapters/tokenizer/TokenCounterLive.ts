/** The token-counting port over the o200k tokenizer (see Tokenizer.ts for how big texts are sliced). */
import { Layer } from "effect"
import { TokenCounter } from "../../app/ports/TokenCounter.ts"
import { countText } from "./Tokenizer.ts"
import { finishTally, tallyTexts } from "./ChatTally.ts"

export const layer = Layer.succeed(
  TokenCounter,
  TokenCounter.of({ count: countText, countMany: (texts) => finishTally(tallyTexts(texts)) })
)
