/**
 * OpenAI's chat-completions protocol at the edge: its body to the chat IR and back, its input counted as OpenAI
 * counts it, the endpoint its clients call. (Its SSE events are converted by the stream transducer; its error
 * envelope is `ApiError`'s `openai` shape.)
 */
import { Result } from "effect"
import { finishTally, tallyOpenAIChat } from "../../adapters/tokenizer/ChatTally.ts"
import type { ChatDialect } from "../../app/ports/ChatDialects.ts"
import { openAIRequestToIR } from "../../plugins/text/convert/openaiRequestToIR.ts"
import { irToOpenAIResponse, openAIResponseToIR } from "../../plugins/text/convert/openaiResponse.ts"
import { countTally, problem } from "./shared.ts"

export const openai: ChatDialect = {
  dialect: "openai",
  called: () => "POST /v1/chat/completions",
  decode: (body) => Result.mapError(openAIRequestToIR(body), problem),
  countInput: (body) => {
    const fields = body as Record<string, never>
    return countTally(tallyOpenAIChat({ messages: fields.messages ?? [], tools: fields.tools }), finishTally)
  },
  readReply: (body) => Result.mapError(openAIResponseToIR(body), problem),
  encodeReply: (response, created) => irToOpenAIResponse(response, { created })
}
