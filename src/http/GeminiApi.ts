/**
 * Google's native paths, `POST /v1beta/models/{model}:{method}`: the colon sits inside the last path segment, so one
 * route takes them all and dispatches on the method. `generateContent` and `streamGenerateContent` are the chat
 * pipeline (ChatApi.ts); `countTokens` answers the tokenizer's count of the prompt — the count a chat hold is placed
 * from — without charging anything; `embedContent` and `batchEmbedContents` go through the embeddings gateway, held
 * and settled exactly as `/v1/embeddings` holds and settles the same texts. Errors in Google's envelope.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { finishTally, tallyGeminiContents } from "../adapters/tokenizer/ChatTally.ts"
import { EmbeddingsGateway } from "../app/EmbeddingsGateway.ts"
import { resolveModel } from "../app/HeldCall.ts"
import type { AuthenticatedKey } from "../app/Keys.ts"
import { noteModel } from "../app/RequestTelemetry.ts"
import type { EmbeddingsRequest } from "../plugins/ModelPlugin.ts"
import { PluginRegistry } from "../app/PluginRegistry.ts"
import { type ApiError, badRequest, notFound } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { gemini as generateContent } from "./ChatApi.ts"
import { readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"

const METHOD_PATH = /^\/v1beta\/models\/([^/:]+):([A-Za-z]+)$/

/** Google's limit on the requests of one `batchEmbedContents` call. */
export const MAX_BATCH_REQUESTS = 100

/** `EmbedContentRequest.taskType` (the Gemini API's `TaskType` enum). */
export const TASK_TYPES: ReadonlyArray<string> = [
  "TASK_TYPE_UNSPECIFIED",
  "RETRIEVAL_QUERY",
  "RETRIEVAL_DOCUMENT",
  "SEMANTIC_SIMILARITY",
  "CLASSIFICATION",
  "CLUSTERING",
  "QUESTION_ANSWERING",
  "FACT_VERIFICATION",
  "CODE_RETRIEVAL_QUERY"
]

type Fields = Readonly<Record<string, unknown>>

const isRecord = (value: unknown): value is Fields =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Google's JSON parser takes proto field names too (`output_dimensionality`), so both spellings are read. */
const either = (fields: Fields, camel: string, snake: string): unknown => fields[camel] ?? fields[snake]

const objectBody = Effect.gen(function* () {
  const body = yield* readJson(yield* HttpServerRequest.HttpServerRequest, yield* HttpSettings, "forwarded")
  if (!isRecord(body)) return yield* badRequest("the request body must be a JSON object")
  return body
})

/** A `model` named in the body, bare or as `models/{id}`, must be the path's model (Google refuses others). */
const sameModel = (value: unknown, pathModel: string, at: string): Effect.Effect<void, ApiError> => {
  if (value === undefined || value === null) return Effect.void
  const named = typeof value === "string" && value.startsWith("models/") ? value.slice("models/".length) : value
  return named === pathModel
    ? Effect.void
    : Effect.fail(
        badRequest(
          `${at}: the model in the request (${JSON.stringify(value)}) must be the model of the URL, models/${pathModel}`,
          at
        )
      )
}

// ---------------------------------------------------------------------------------------------------------------
// countTokens

/** Chat models (any upstream protocol) and embeddings models can have their prompt counted. */
const requireCountable = (pathModel: string, key: AuthenticatedKey) =>
  Effect.gen(function* () {
    yield* resolveModel(
      yield* PluginRegistry,
      ["chat", "embeddings"],
      pathModel,
      key,
      `POST /v1beta/models/${pathModel}:countTokens`
    )
  })

/** `contents`: Content objects whose `parts`, when given, is an array and whose role is Gemini's. */
const checkContents = (contents: unknown, at: string): Effect.Effect<ReadonlyArray<unknown>, ApiError> => {
  if (contents === undefined || contents === null) {
    return Effect.fail(badRequest(`${at}: is required (or send generateContentRequest)`, at))
  }
  if (!Array.isArray(contents)) return Effect.fail(badRequest(`${at}: expected an array of Content objects`, at))
  for (const [index, content] of contents.entries()) {
    const where = `${at}[${index}]`
    if (!isRecord(content)) return Effect.fail(badRequest(`${where}: expected a Content object`, where))
    if (content.parts !== undefined && !Array.isArray(content.parts)) {
      return Effect.fail(badRequest(`${where}.parts: expected an array of parts`, `${where}.parts`))
    }
    if (content.role !== undefined && content.role !== "user" && content.role !== "model") {
      return Effect.fail(badRequest(`${where}.role: expected 'user' or 'model'`, `${where}.role`))
    }
  }
  return Effect.succeed(contents)
}

/** The fields that cost input tokens, from `{contents}` or `{generateContentRequest: {...}}`. */
const countedFields = (body: Fields, pathModel: string) =>
  Effect.gen(function* () {
    const wrapped = either(body, "generateContentRequest", "generate_content_request")
    if (wrapped !== undefined && body.contents !== undefined) {
      return yield* badRequest("send either contents or generateContentRequest, not both", "generateContentRequest")
    }
    let source = body
    let at = "contents"
    if (wrapped !== undefined) {
      if (!isRecord(wrapped)) {
        return yield* badRequest("generateContentRequest: expected an object", "generateContentRequest")
      }
      yield* sameModel(wrapped.model, pathModel, "generateContentRequest.model")
      source = wrapped
      at = "generateContentRequest.contents"
    }
    const contents = yield* checkContents(source.contents, at)
    const tools = source.tools
    if (tools !== undefined && tools !== null && !Array.isArray(tools)) {
      return yield* badRequest(`${at.replace("contents", "tools")}: expected an array`, "tools")
    }
    return {
      contents,
      systemInstruction: either(source, "systemInstruction", "system_instruction"),
      tools: tools as ReadonlyArray<unknown> | null | undefined
    }
  })

const countTokens = (pathModel: string) =>
  Effect.gen(function* () {
    const key = yield* authenticate("gemini")
    const body = yield* objectBody
    yield* requireCountable(pathModel, key)
    const fields = yield* countedFields(body, pathModel)
    // The same tally the chat gateway holds a Gemini request's input by (ChatGateway.ts, `tallyInput`).
    return json({ totalTokens: yield* finishTally(tallyGeminiContents(fields)) })
  })

// ---------------------------------------------------------------------------------------------------------------
// embedContent, batchEmbedContents

interface EmbedRequest {
  readonly text: string
  readonly dimensions: number | undefined
  readonly taskType: string | undefined
  readonly title: string | undefined
}

/** A Content's text: its text parts joined by newlines (as Gemini joins them); other parts cannot be embedded. */
const contentText = (content: unknown, at: string): Effect.Effect<string, ApiError> => {
  if (content === undefined || content === null) return Effect.fail(badRequest(`${at}: is required`, at))
  if (!isRecord(content)) return Effect.fail(badRequest(`${at}: expected a Content object`, at))
  const parts = content.parts
  if (!Array.isArray(parts) || parts.length === 0) {
    return Effect.fail(badRequest(`${at}.parts: expected a non-empty array of text parts`, `${at}.parts`))
  }
  const texts: Array<string> = []
  for (const [index, part] of parts.entries()) {
    const text = isRecord(part) ? part.text : undefined
    if (typeof text !== "string") {
      const where = `${at}.parts[${index}]`
      return Effect.fail(badRequest(`${where}: only text parts can be embedded, each with a string text`, where))
    }
    texts.push(text)
  }
  const joined = texts.join("\n")
  return joined.length === 0 ? Effect.fail(badRequest(`${at}: the text to embed is empty`, at)) : Effect.succeed(joined)
}

/** One `EmbedContentRequest`: its content's text, `outputDimensionality`, `taskType` and `title`. */
const embedRequest = (fields: Fields, pathModel: string, at: string) =>
  Effect.gen(function* () {
    const prefix = at === "" ? "" : `${at}.`
    yield* sameModel(fields.model, pathModel, `${prefix}model`)
    const text = yield* contentText(fields.content, `${prefix}content`)
    const dimensions = either(fields, "outputDimensionality", "output_dimensionality")
    if (
      dimensions !== undefined &&
      dimensions !== null &&
      !(typeof dimensions === "number" && Number.isSafeInteger(dimensions) && dimensions > 0)
    ) {
      return yield* badRequest(
        `${prefix}outputDimensionality: expected a positive integer`,
        `${prefix}outputDimensionality`
      )
    }
    const taskType = either(fields, "taskType", "task_type")
    if (taskType !== undefined && taskType !== null && !TASK_TYPES.includes(taskType as string)) {
      return yield* badRequest(`${prefix}taskType: expected one of ${TASK_TYPES.join(", ")}`, `${prefix}taskType`)
    }
    const title = fields.title
    if (title !== undefined && title !== null && typeof title !== "string") {
      return yield* badRequest(`${prefix}title: expected a string`, `${prefix}title`)
    }
    return {
      text,
      dimensions: typeof dimensions === "number" ? dimensions : undefined,
      taskType: typeof taskType === "string" ? taskType : undefined,
      title: typeof title === "string" ? title : undefined
    } satisfies EmbedRequest
  })

const batchRequests = (body: Fields, pathModel: string) =>
  Effect.gen(function* () {
    const requests = body.requests
    if (!Array.isArray(requests) || requests.length === 0) {
      return yield* badRequest("requests: expected a non-empty array of EmbedContentRequest objects", "requests")
    }
    if (requests.length > MAX_BATCH_REQUESTS) {
      return yield* badRequest(
        `requests: at most ${MAX_BATCH_REQUESTS} requests per batch, got ${requests.length}`,
        "requests"
      )
    }
    return yield* Effect.forEach(requests, (request: unknown, index) =>
      isRecord(request)
        ? embedRequest(request, pathModel, `requests[${index}]`)
        : Effect.fail(badRequest(`requests[${index}]: expected an EmbedContentRequest object`, `requests[${index}]`))
    )
  })

/**
 * The texts through the embeddings gateway as one call (one hold, billed as `/v1/embeddings` bills the same texts).
 * The upstream is asked for the largest dimension any request names (all of them, when one names none) and each
 * vector is cut to its request's `outputDimensionality`: what Gemini does, its embeddings being trained so that a
 * prefix is itself an embedding; the cut vector is not renormalised, as Gemini leaves that to the caller.
 */
const embedAll = (
  pathModel: string,
  method: "embedContent" | "batchEmbedContents",
  key: AuthenticatedKey,
  requests: ReadonlyArray<EmbedRequest>
) =>
  Effect.gen(function* () {
    yield* resolveModel(
      yield* PluginRegistry,
      "embeddings",
      pathModel,
      key,
      `POST /v1beta/models/${pathModel}:${method}`
    )
    const named = requests.map((r) => r.dimensions)
    const request: EmbeddingsRequest = {
      // The hints reach a Gemini upstream, where they shape the vectors; other upstreams have no such fields.
      inputs: requests.map((r) => ({ _tag: "Text", text: r.text, taskType: r.taskType, title: r.title })),
      dimensions: named.every((d) => d !== undefined) ? Math.max(...named) : undefined,
      user: undefined
    }
    const reply = yield* (yield* EmbeddingsGateway).embed({
      model: pathModel,
      request,
      key,
      requestId: yield* RequestId
    })
    return reply.vectors.map((vector, index) => {
      const wanted = requests[index]?.dimensions
      return { values: wanted !== undefined && vector.length > wanted ? vector.slice(0, wanted) : vector }
    })
  })

const embedContent = (pathModel: string) =>
  Effect.gen(function* () {
    const key = yield* authenticate("gemini")
    const body = yield* objectBody
    const request = yield* embedRequest(body, pathModel, "")
    const [embedding] = yield* embedAll(pathModel, "embedContent", key, [request])
    return json({ embedding })
  })

const batchEmbedContents = (pathModel: string) =>
  Effect.gen(function* () {
    const key = yield* authenticate("gemini")
    const body = yield* objectBody
    const requests = yield* batchRequests(body, pathModel)
    return json({ embeddings: yield* embedAll(pathModel, "batchEmbedContents", key, requests) })
  })

// ---------------------------------------------------------------------------------------------------------------

const dispatch = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = new URL(request.url, "http://x").pathname
  const match = METHOD_PATH.exec(path)
  if (match === null) return yield* notFound(`unknown path ${path}`, "unknown_path")
  const method = match[2]
  if (method === "generateContent" || method === "streamGenerateContent") return yield* generateContent
  const pathModel = yield* Effect.try({
    try: () => decodeURIComponent(match[1]),
    catch: () => badRequest("the model in the path is not valid percent-encoded UTF-8", "model")
  })
  yield* noteModel(pathModel)
  switch (method) {
    case "countTokens":
      return yield* countTokens(pathModel)
    case "embedContent":
      return yield* embedContent(pathModel)
    case "batchEmbedContents":
      return yield* batchEmbedContents(pathModel)
    default:
      return yield* notFound(
        `unknown method ${method} in ${path}: this gateway serves generateContent, streamGenerateContent, countTokens, embedContent and batchEmbedContents`,
        "unknown_path"
      )
  }
})

export const layer = route("POST", "/v1beta/models/*", dispatch, "gemini")
