/**
 * Which embedding or audio handler answers a request: OpenAI embeddings, speech and transcriptions under `/v1`, and
 * Gemini's `:embedContent`/`:batchEmbedContents` (the text generation regex in GeminiGenerate.ts does not admit them).
 */
import type { RawSimRequest } from "../images/EditInputs.ts"
import type { Dialect, SimContext, SimReply } from "../SimResponse.ts"
import type { AudioReply } from "./AudioReply.ts"
import type { AudioTools } from "./AudioTools.ts"
import { GEMINI_EMBED_ROUTE, geminiEmbed } from "./GeminiEmbeddings.ts"
import { createEmbeddings, EMBEDDINGS_PATH } from "./OpenAIEmbeddings.ts"
import { createSpeech, SPEECH_PATH } from "./Speech.ts"
import { createTranscription, TRANSCRIPTIONS_PATH } from "./Transcription.ts"

export interface AudioRoute {
  readonly dialect: Dialect
  readonly forcedBody?: undefined
  readonly handle: (request: RawSimRequest, context: SimContext) => SimReply | AudioReply
}

export const audioRoute = (request: RawSimRequest, tools: AudioTools): AudioRoute | undefined => {
  if (request.method !== "POST") return undefined
  const { path } = request
  if (path === EMBEDDINGS_PATH) return { dialect: "openai", handle: (_, ctx) => createEmbeddings(request, ctx) }
  if (path === SPEECH_PATH) return { dialect: "openai", handle: (_, ctx) => createSpeech(request, ctx, tools) }
  if (path === TRANSCRIPTIONS_PATH) {
    return { dialect: "openai", handle: (_, ctx) => createTranscription(request, ctx, tools) }
  }
  const gemini = GEMINI_EMBED_ROUTE.exec(path)
  if (gemini !== null) {
    const model = decodeURIComponent(gemini[1]!)
    const method = gemini[2] as "embedContent" | "batchEmbedContents"
    return { dialect: "gemini", handle: (_, ctx) => geminiEmbed(request, ctx, model, method) }
  }
  return undefined
}
