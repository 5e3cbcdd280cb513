/**
 * Gemini's generateContent protocol at the edge: its body (with the model and streaming in the URL) to the chat IR
 * and back, its input counted, the endpoint its clients call. (Its SSE events are converted by the stream transducer;
 * its error envelope is `ApiError`'s Google shape.)
 */
import { Result } from "effect"
import { finishTally, tallyGeminiContents } from "../../adapters/tokenizer/ChatTally.ts"
import type { ChatDialect } from "../../app/ports/ChatDialects.ts"
import { geminiRequestToIR } from "../../plugins/text/convert/geminiRequestToIR.ts"
import { geminiResponseToIR, irToGeminiResponse } from "../../plugins/text/convert/geminiResponse.ts"
import { countTally, problem } from "./shared.ts"

export const gemini: ChatDialect = {
  dialect: "gemini",
  called: (model, stream) => `POST /v1beta/models/${model}:${stream ? "streamGenerateContent" : "generateContent"}`,
  decode: (body, url) => Result.mapError(geminiRequestToIR(body, url), problem),
  countInput: (body) => {
    const fields = body as Record<string, never>
    return countTally(
      tallyGeminiContents({
        contents: fields.contents ?? [],
        systemInstruction: fields.systemInstruction,
        tools: fields.tools
      }),
      finishTally
    )
  },
  readReply: (body, fallback) =>
    Result.mapError(geminiResponseToIR(body, { fallbackId: fallback.id, fallbackModel: fallback.model }), problem),
  encodeReply: (response) => irToGeminiResponse(response)
}
