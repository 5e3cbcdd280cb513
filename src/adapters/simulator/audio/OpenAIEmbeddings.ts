/**
 * OpenAI's `POST /v1/embeddings`. Vectors come from `EmbeddingVectors.ts`; usage counts
 * o200k tokens of each text (token-id inputs count their length).
 *
 * Dimensions: models whose name contains `large` default to 3072 and accept 1..3072; models whose name contains `sim`
 * default to 256 (small replies for tests) and accept 1..3072; every other model (`text-embedding-3-small`,
 * `text-embedding-ada-002`, ...) defaults to 1536 and accepts 1..1536. `text-embedding-ada-002` rejects `dimensions`
 * like the real API.
 */
import { countText } from "../../tokenizer/Tokenizer.ts"
import { invalid, servedModel } from "../OpenAIReplies.ts"
import { field } from "../Json.ts"
import { refuseOpenAIRequest } from "../OpenAIChat.ts"
import { json, type SimContext, type SimReply, type SimRequest } from "../SimResponse.ts"
import { type EmbeddingInput, embeddingVector, toBase64Floats } from "./EmbeddingVectors.ts"

export const EMBEDDINGS_PATH = "/v1/embeddings"

const MAX_INPUTS = 2048
const MAX_INPUT_TOKENS = 8192

export const defaultDimensions = (model: string): number => {
  if (model.includes("large")) return 3072
  if (model.includes("sim")) return 256
  return 1536
}

const maxDimensions = (model: string): number => (model.includes("large") || model.includes("sim") ? 3072 : 1536)

const invalidInput = (): SimReply =>
  invalid(
    "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
    "input"
  )

const isTokenId = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 0

/** The inputs as texts or token lists, or undefined when the shape is not one of the four OpenAI accepts. */
const readInputs = (input: unknown): ReadonlyArray<EmbeddingInput> | undefined => {
  if (typeof input === "string") return [{ _tag: "Text", text: input }]
  if (!Array.isArray(input) || input.length === 0) return undefined
  if (input.every((item) => typeof item === "string")) return input.map((text: string) => ({ _tag: "Text", text }))
  if (input.every(isTokenId)) return [{ _tag: "Tokens", ids: input }]
  if (input.every((item) => Array.isArray(item) && item.every(isTokenId))) {
    return input.map((ids: ReadonlyArray<number>) => ({ _tag: "Tokens", ids }))
  }
  return undefined
}

const tokensOf = (input: EmbeddingInput): number => (input._tag === "Text" ? countText(input.text) : input.ids.length)

/** `POST /v1/embeddings`. */
export const createEmbeddings = (request: SimRequest, context: SimContext): SimReply => {
  const refused = refuseOpenAIRequest(request, context)
  if (refused !== undefined) return refused
  const body = request.body
  const model = servedModel(body, context.models)
  if (typeof model !== "string") return model
  const rawInput = field(body, "input")
  if (rawInput === undefined || rawInput === null) {
    return invalid("Missing required parameter: 'input'.", "input", "missing_required_parameter")
  }
  const inputs = readInputs(rawInput)
  if (inputs === undefined) return invalidInput()
  if (inputs.length > MAX_INPUTS) {
    return invalid(
      `Invalid 'input': array too long. Expected an array with maximum length ${MAX_INPUTS}, but got an array with length ${inputs.length} instead.`,
      "input",
      "array_above_max_length"
    )
  }
  if (inputs.some((input) => (input._tag === "Text" ? input.text.length === 0 : input.ids.length === 0))) {
    return invalidInput()
  }
  const format = field(body, "encoding_format") ?? "float"
  if (format !== "float" && format !== "base64") {
    return invalid(
      `Invalid value: '${String(format)}'. Supported values are: 'float' and 'base64'.`,
      "encoding_format",
      "invalid_value"
    )
  }
  const rawDimensions = field(body, "dimensions")
  let dimensions = defaultDimensions(model)
  if (rawDimensions !== undefined && rawDimensions !== null) {
    if (model.startsWith("text-embedding-ada")) {
      return invalid("This model does not support specifying dimensions.", "dimensions")
    }
    const limit = maxDimensions(model)
    if (typeof rawDimensions !== "number" || !Number.isInteger(rawDimensions) || rawDimensions < 1) {
      return invalid(
        `Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got ${String(rawDimensions)} instead.`,
        "dimensions",
        "integer_below_min_value"
      )
    }
    if (rawDimensions > limit) {
      return invalid(
        `This model's maximum dimensions is ${limit}, but ${rawDimensions} was requested.`,
        "dimensions",
        "invalid_value"
      )
    }
    dimensions = rawDimensions
  }
  const counts = inputs.map(tokensOf)
  const longest = counts.findIndex((count) => count > MAX_INPUT_TOKENS)
  if (longest >= 0) {
    return invalid(
      `This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, however you requested ${counts[longest]} tokens (${counts[longest]} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`,
      null,
      null
    )
  }
  const promptTokens = counts.reduce((sum, count) => sum + count, 0)
  return json(200, {
    object: "list",
    data: inputs.map((input, index) => {
      const vector = embeddingVector(input, dimensions)
      return { object: "embedding", index, embedding: format === "base64" ? toBase64Floats(vector) : vector }
    }),
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens }
  })
}
