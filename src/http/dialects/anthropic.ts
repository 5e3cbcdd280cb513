/**
 * Anthropic's messages protocol at the edge: its body to the chat IR and back, its input counted, the endpoint its
 * clients call. (Its SSE events are converted by the stream transducer; its error envelope is `ApiError`'s.)
 */
import { Result } from "effect"
import { finishTally, tallyAnthropicMessages } from "../../adapters/tokenizer/ChatTally.ts"
import type { ChatDialect } from "../../app/ports/ChatDialects.ts"
import { anthropicRequestToIR } from "../../plugins/text/convert/anthropicRequestToIR.ts"
import { anthropicResponseToIR, irToAnthropicResponse } from "../../plugins/text/convert/anthropicResponse.ts"
import { countTally, problem } from "./shared.ts"

export const anthropic: ChatDialect = {
  dialect: "anthropic",
  called: () => "POST /v1/messages",
  decode: (body) => Result.mapError(anthropicRequestToIR(body), problem),
  countInput: (body) => {
    const fields = body as Record<string, never>
    return countTally(
      tallyAnthropicMessages({ messages: fields.messages ?? [], system: fields.system, tools: fields.tools }),
      finishTally
    )
  },
  readReply: (body) => Result.mapError(anthropicResponseToIR(body), problem),
  encodeReply: (response) => irToAnthropicResponse(response)
}
