/** The chat pipeline's table of protocols (app/ports/ChatDialects.ts), from the edge's dialect modules. */
import { Layer } from "effect"
import { ChatDialects } from "../../app/ports/ChatDialects.ts"
import { anthropic } from "./anthropic.ts"
import { gemini } from "./gemini.ts"
import { openai } from "./openai.ts"
import { responses } from "./responses.ts"

export const layer = Layer.succeed(ChatDialects, ChatDialects.of({ openai, anthropic, gemini, responses }))
