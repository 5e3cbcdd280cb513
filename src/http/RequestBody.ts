/**
 * Reads and decodes request bodies: a size limit enforced before and while reading (413), JSON syntax errors and
 * schema failures as 400s that name the offending field (`models[3].pricing.input: expected a decimal string`), and
 * the limits of InputLimits.ts (nesting depth; storable text) checked in the same pass for every JSON body.
 */
import { parseInSlices } from "../adapters/json/SlicedJson.ts"
import { Effect, Result, Schema, SchemaIssue } from "effect"
import { HttpIncomingMessage, type HttpServerRequest } from "effect/http"
import { type ApiError, apiError, badRequest } from "./ApiError.ts"
import { noteModel } from "../app/RequestTelemetry.ts"
import { storableTextProblem } from "../domain/StorableText.ts"
import { checkJson, formatPath } from "./InputLimits.ts"
import type { Dialect } from "@tollgate/plugin-spec"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** Every problem of a schema failure, each as `path: message`. */
export const schemaIssues = (
  issue: SchemaIssue.Issue
): ReadonlyArray<{ readonly path: string; readonly message: string }> =>
  formatter(issue).issues.map((i) => ({
    path: formatPath(
      (i.path ?? []).map((p) =>
        typeof p === "object" && p !== null && "key" in p ? p.key : p
      ) as ReadonlyArray<PropertyKey>
    ),
    message: i.message === "Missing key" ? "is required" : i.message
  }))

export const decodeWith =
  <S extends Schema.Top>(schema: S) =>
  (input: unknown): Effect.Effect<S["Type"], ApiError> => {
    const result = Schema.decodeUnknownResult(schema as unknown as Schema.Codec<S["Type"], unknown>)(input, {
      errors: "all"
    })
    if (Result.isSuccess(result)) return Effect.succeed(result.success)
    const issues = schemaIssues(result.failure.issue)
    const first = issues[0]
    const message = issues.map((i) => (i.path === "" ? i.message : `${i.path}: ${i.message}`)).join("; ")
    return Effect.fail(badRequest(message, first === undefined || first.path === "" ? null : first.path))
  }

export interface BodyLimits {
  readonly maxBodyBytes: number
}

const isBodyTooLarge = (error: unknown): boolean => {
  const reason = (error as { reason?: { _tag?: string; reason?: string } }).reason
  return reason?._tag === "RequestParseError" && reason.reason === "BodyTooLarge"
}

export const tooLarge = (limit: number) =>
  apiError(413, `request body is larger than the ${limit}-byte limit`, { code: "request_too_large" })

/** The raw body bytes, refused with 413 past the limit (checked on Content-Length first, then while reading). */
export const readBytes = (request: HttpServerRequest.HttpServerRequest, limits: BodyLimits) =>
  Effect.gen(function* () {
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > limits.maxBodyBytes) return yield* tooLarge(limits.maxBodyBytes)
    const buffer = yield* request.arrayBuffer.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, BigInt(limits.maxBodyBytes) as never),
      Effect.mapError((error) =>
        isBodyTooLarge(error)
          ? tooLarge(limits.maxBodyBytes)
          : badRequest("the request body could not be read", null, "invalid_body")
      )
    )
    return new Uint8Array(buffer)
  })

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * What a JSON body's text is used for. `stored` (the default, so a new endpoint is safe): every string and key may
 * reach storage and must be storable. `forwarded`: the content only travels upstream (prompts, where a NUL is valid),
 * so only the nesting depth and the `model` field are checked.
 */
export type BodyText = "stored" | "forwarded"

/** Bodies past this many bytes are decoded a slice at a time, the event loop let in between (a 30 MB prompt). */
const DECODE_SLICE = 4 * 1024 * 1024

const notUtf8 = () => badRequest("the request body is not valid UTF-8")

/** The body as text: strict UTF-8 (an invalid byte is a 400), in slices for a large body. */
const decodeUtf8 = (bytes: Uint8Array) => {
  if (bytes.length <= DECODE_SLICE) {
    return Effect.try({ try: () => utf8.decode(bytes), catch: notUtf8 })
  }
  return Effect.gen(function* () {
    // A decoder of its own: `stream` keeps a character cut between two slices whole.
    const decoder = new TextDecoder("utf-8", { fatal: true })
    const pieces: Array<string> = []
    for (let at = 0; at < bytes.length; at += DECODE_SLICE) {
      const end = Math.min(at + DECODE_SLICE, bytes.length)
      pieces.push(
        yield* Effect.try({
          try: () => decoder.decode(bytes.subarray(at, end), { stream: end < bytes.length }),
          catch: notUtf8
        })
      )
      yield* Effect.yieldNow
    }
    return pieces.join("")
  })
}

/**
 * Parses a JSON body: the content type must be JSON when given, the text valid UTF-8 and valid JSON, nested at most
 * `MAX_JSON_DEPTH` levels, and its text storable unless `text` is `forwarded`.
 */
export const readJson = (request: HttpServerRequest.HttpServerRequest, limits: BodyLimits, text: BodyText = "stored") =>
  Effect.gen(function* () {
    const contentType = request.headers["content-type"]
    if (contentType !== undefined && !/json/i.test(contentType)) {
      return yield* apiError(415, `expected a JSON body (Content-Type: application/json), got ${contentType}`, {
        code: "unsupported_media_type"
      })
    }
    const bytes = yield* readBytes(request, limits)
    if (bytes.length === 0) return yield* badRequest("the request body is empty; expected a JSON object")
    const decoded = yield* decodeUtf8(bytes)
    const body = yield* parseInSlices(decoded).pipe(
      Effect.mapError((error) => badRequest(`the request body is not valid JSON: ${error.message}`))
    )
    yield* checkJson(body, { storable: text === "stored" })
    if (typeof body === "object" && body !== null) {
      const model = (body as { model?: unknown }).model
      // The model name is the one field of a forwarded body that is looked up and recorded (usage, metrics).
      const problem = typeof model === "string" ? storableTextProblem(model) : undefined
      if (problem !== undefined) return yield* badRequest(`model: ${problem}`, "model", "invalid_text")
      yield* noteModel(model)
    }
    return body
  })

/**
 * A JSON value sent as text inside a field (the `metadata` a multipart client sends as a string): parsed and held to
 * the same limits as a body, problems named under `path`. Text that is not JSON is left as it is, for the field's own
 * validator to refuse in its words.
 */
export const parseJsonField = (text: string, path: ReadonlyArray<PropertyKey>, bodyText: BodyText = "stored") =>
  Effect.gen(function* () {
    const parsed = Result.try((): unknown => JSON.parse(text))
    if (Result.isFailure(parsed)) return text as unknown
    yield* checkJson(parsed.success, { storable: bodyText === "stored", prefix: path })
    return parsed.success
  })

/** Parses a multipart body already read within its limit (the Fetch API's parser, as the official SDKs send it). */
export const parseFormData = (bytes: Uint8Array<ArrayBuffer>, contentType: string) =>
  Effect.gen(function* () {
    // Edge: the Fetch API's multipart parser (undici) is promise-based.
    const form = yield* Effect.tryPromise({
      try: () => new Response(bytes, { headers: { "content-type": contentType } }).formData(),
      catch: () => badRequest("the multipart body could not be parsed", null, "invalid_body")
    })
    yield* noteModel(form.get("model"))
    return form
  })

export const readJsonAs = <S extends Schema.Top>(
  request: HttpServerRequest.HttpServerRequest,
  limits: BodyLimits,
  schema: S
): Effect.Effect<S["Type"], ApiError> => Effect.flatMap(readJson(request, limits), decodeWith(schema))

export const isCount = (value: unknown, min: number): boolean =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= min

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const kindOf = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
      ? "an array"
      : typeof value === "object"
        ? "an object"
        : `a ${typeof value}`

/**
 * A flag must be a boolean (null too where the vendor's schema allows it, meaning "not given"): a flag read as
 * `=== true` would otherwise take `"yes"` for false and quietly answer something the client did not ask for.
 */
export const flagProblem = (value: unknown, path: string, nullable: boolean): ApiError | undefined =>
  value === undefined || typeof value === "boolean" || (nullable && value === null)
    ? undefined
    : badRequest(`${path}: expected a boolean (true or false), got ${kindOf(value)}`, path)

/** The top-level flags of a chat request the gateway reads itself; nested ones are checked by the converters. */
const chatFlagProblem = (dialect: Dialect, body: Record<string, unknown>) => {
  if (dialect === "gemini") return undefined
  const nullable = dialect === "openai"
  const stream = flagProblem(body.stream, "stream", nullable)
  if (stream !== undefined || dialect === "anthropic") return stream
  const parallel = flagProblem(body.parallel_tool_calls, "parallel_tool_calls", true)
  if (parallel !== undefined) return parallel
  const options = body.stream_options
  if (options === undefined || options === null) return undefined
  if (!isRecord(options)) return badRequest("stream_options: expected an object", "stream_options")
  return flagProblem(options.include_usage, "stream_options.include_usage", true)
}

/**
 * The shape checks the chat converters rely on but do not make: a wrong type here would otherwise reach the
 * tokenizer or the BigInt pricing and surface as a 500, or a flag would be misread. Everything else is left to the
 * protocol converters.
 */
export const chatShapeProblem = (dialect: Dialect, body: Record<string, unknown>): ApiError | undefined => {
  const list = dialect === "gemini" ? "contents" : "messages"
  if (body[list] !== undefined && !Array.isArray(body[list])) return badRequest(`${list}: expected an array`, list)
  const flag = chatFlagProblem(dialect, body)
  if (flag !== undefined) return flag
  const counts =
    dialect === "gemini" ? [] : dialect === "anthropic" ? ["max_tokens"] : ["max_tokens", "max_completion_tokens", "n"]
  for (const field of counts) {
    const value = body[field]
    if (value !== undefined && value !== null && !isCount(value, 1)) {
      return badRequest(`${field}: expected a positive integer`, field)
    }
  }
  if (dialect === "gemini") {
    const config = body.generationConfig
    if (config !== undefined && config !== null) {
      if (typeof config !== "object" || Array.isArray(config)) {
        return badRequest("generationConfig: expected an object", "generationConfig")
      }
      for (const field of ["maxOutputTokens", "candidateCount"]) {
        const value = (config as Record<string, unknown>)[field]
        if (value !== undefined && value !== null && !isCount(value, 1)) {
          return badRequest(`generationConfig.${field}: expected a positive integer`, `generationConfig.${field}`)
        }
      }
    }
  }
  return undefined
}

/** The chat endpoints, by the fields each one requires (chat completions' are checked by its converter). */
export type ChatEndpoint = "chat_completions" | "messages" | "count_tokens" | "generate_content"

const missing = (value: unknown): boolean => value === undefined || value === null

/**
 * The fields a protocol requires, refused in its vendor's own words before anything is held: a messages request
 * without `max_tokens` would otherwise be held at the model's cap and served, and an empty conversation sent upstream
 * (and billed) only to be refused there or answered with nothing.
 */
export const requiredFieldProblem = (endpoint: ChatEndpoint, body: Record<string, unknown>): ApiError | undefined => {
  switch (endpoint) {
    case "chat_completions":
      return undefined
    case "messages":
    case "count_tokens":
      if (missing(body.messages)) return badRequest("messages: Field required", "messages")
      if (endpoint === "messages" && missing(body.max_tokens))
        return badRequest("max_tokens: Field required", "max_tokens")
      if (Array.isArray(body.messages) && body.messages.length === 0) {
        return badRequest("messages: at least one message is required", "messages")
      }
      return undefined
    case "generate_content":
      if (missing(body.contents) || (Array.isArray(body.contents) && body.contents.length === 0)) {
        return badRequest("* GenerateContentRequest.contents: contents is not specified", "contents")
      }
      return undefined
  }
}
