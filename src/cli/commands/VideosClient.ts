/**
 * The public video API (`/v1/videos`) as `tollgate videos` calls it, with an API key rather than the admin token.
 * The key comes only from `TOLLGATE_API_KEY` (argv shows up in `ps` and shell history) and stays `Redacted`.
 */
import {
  Config,
  Context,
  Duration,
  Effect,
  FileSystem,
  Layer,
  Option,
  Redacted,
  Result,
  Schema,
  Sink,
  Stream
} from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { HttpMethod } from "effect/http/HttpMethod"
import { describeNetworkFailure } from "../AdminClient.ts"
import { ErrorEnvelope } from "../AdminApi.ts"
import { ServerUnreachable, UnexpectedResponse } from "../CliErrors.ts"
import { ServerUrl } from "../CliSettings.ts"

export class ApiKeyMissing extends Schema.TaggedError<ApiKeyMissing>()("ApiKeyMissing", {}) {
  override get message() {
    return "no API key: set TOLLGATE_API_KEY to an sk-… key (an admin creates one with: tollgate keys create)"
  }
}

export class ApiKeyRefused extends Schema.TaggedError<ApiKeyRefused>()("ApiKeyRefused", {
  serverMessage: Schema.String
}) {
  override get message() {
    return `the API key in TOLLGATE_API_KEY was refused: ${this.serverMessage}`
  }
}

/** The server said no in the OpenAI envelope; its message is what the user needs. */
export class VideoRequestRejected extends Schema.TaggedError<VideoRequestRejected>()("VideoRequestRejected", {
  status: Schema.Number,
  serverMessage: Schema.String,
  code: Schema.NullOr(Schema.String)
}) {
  override get message() {
    const code = this.code === null ? "" : `, ${this.code}`
    return `${this.serverMessage} (HTTP ${this.status}${code})`
  }
}

export class VideoFailed extends Schema.TaggedError<VideoFailed>()("VideoFailed", {
  id: Schema.String,
  reason: Schema.String,
  code: Schema.NullOr(Schema.String)
}) {
  override get message() {
    return `video ${this.id} failed: ${this.reason}${this.code === null ? "" : ` (${this.code})`}`
  }
}

export class VideoDownloadFailed extends Schema.TaggedError<VideoDownloadFailed>()("VideoDownloadFailed", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not save the video to ${this.path}: ${this.reason}`
  }
}

export type VideosFailure = ApiKeyMissing | ApiKeyRefused | VideoRequestRejected | VideoFailed | VideoDownloadFailed

type CallError = ServerUnreachable | ApiKeyRefused | VideoRequestRejected | UnexpectedResponse

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))
const OptionalNumber = Schema.optional(Schema.NullOr(Schema.Number))

export const VideoCharge = Schema.Struct({ held: OptionalText, captured: OptionalText, refunded: OptionalText })
export type VideoCharge = typeof VideoCharge.Type

/** Tolerant like the admin schemas: only `id` and `status` are needed to follow a task. */
export const VideoTask = Schema.Struct({
  id: Schema.String,
  object: OptionalText,
  model: OptionalText,
  status: Schema.String,
  progress: OptionalNumber,
  created_at: OptionalNumber,
  completed_at: OptionalNumber,
  expires_at: OptionalNumber,
  seconds: Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Number]))),
  metadata: Schema.optional(
    Schema.NullOr(
      Schema.Struct({ url: OptionalText, resolution: OptionalText, ratio: OptionalText, input_type: OptionalText })
    )
  ),
  error: Schema.optional(Schema.NullOr(Schema.Struct({ message: OptionalText, code: OptionalText }))),
  charge: Schema.optional(Schema.NullOr(VideoCharge))
})
export type VideoTask = typeof VideoTask.Type

export const VideoList = Schema.Struct({
  object: OptionalText,
  data: Schema.Array(VideoTask),
  first_id: OptionalText,
  last_id: OptionalText,
  has_more: Schema.optional(Schema.NullOr(Schema.Boolean))
})
export type VideoList = typeof VideoList.Type

export interface VideoAnswer<A> {
  readonly status: number
  /** The body as sent, for `--json`. */
  readonly body: unknown
  readonly value: A
}

export interface VideoListQuery {
  readonly limit?: number | undefined
  readonly after?: string | undefined
}

type Call<A> = Effect.Effect<VideoAnswer<A>, CallError>

export interface VideoApiShape {
  readonly url: string
  readonly submit: (body: unknown) => Call<VideoTask>
  readonly get: (id: string) => Call<VideoTask>
  readonly list: (query: VideoListQuery) => Call<VideoList>
  /** Streams the MP4 to `path` (through `<path>.part`, so a broken download never looks finished); answers bytes. */
  readonly download: (
    id: string,
    path: string
  ) => Effect.Effect<number, CallError | VideoDownloadFailed, FileSystem.FileSystem>
}

const requestTimeout = Duration.seconds(30)

const apiKeyFromEnv = Config.option(Config.Redacted("TOLLGATE_API_KEY"))

export const loadApiKey: Effect.Effect<Redacted.Redacted<string>, ApiKeyMissing> = Effect.gen(function* () {
  const key = yield* Effect.orDie(apiKeyFromEnv)
  if (Option.isNone(key) || Redacted.value(key.value).trim() === "") return yield* new ApiKeyMissing()
  return Redacted.make(Redacted.value(key.value).trim())
})

const parseJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

const firstLine = (text: string) => {
  const line = text.trim().split("\n", 1)[0] ?? ""
  return line.length > 120 ? `${line.slice(0, 117)}...` : line
}

/** An error answer as the user should read it: the envelope's message when there is one. */
export const rejection = (
  url: string,
  status: number,
  text: string
): ApiKeyRefused | VideoRequestRejected | UnexpectedResponse => {
  const parsed = parseJson(text)
  const envelope = Result.isSuccess(parsed) ? Schema.decodeUnknownOption(ErrorEnvelope)(parsed.success) : Option.none()
  if (Option.isNone(envelope)) {
    return new UnexpectedResponse({ url, status, detail: text.trim() === "" ? "empty error body" : firstLine(text) })
  }
  const { message, code } = envelope.value.error
  if (status === 401) return new ApiKeyRefused({ serverMessage: message })
  return new VideoRequestRejected({ status, serverMessage: message, code: code ?? null })
}

export const makeVideoApi = (options: { readonly url: string; readonly apiKey: Redacted.Redacted<string> }) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const { url, apiKey } = options
    const unreachable = (reason: string) => new ServerUnreachable({ url, reason })

    const send = (request: HttpClientRequest.HttpClientRequest) =>
      client
        .execute(request.pipe(HttpClientRequest.bearerToken(Redacted.value(apiKey))))
        .pipe(
          Effect.mapError((error) =>
            error.reason._tag === "InvalidUrlError"
              ? unreachable(`"${url}" is not a valid URL`)
              : unreachable(describeNetworkFailure(error.reason.cause ?? error))
          )
        )

    const readBody = (response: HttpClientResponse.HttpClientResponse) =>
      response.text.pipe(Effect.mapError((error) => unreachable(describeNetworkFailure(error.reason.cause ?? error))))

    const call = Effect.fn("VideoApi.call")(
      function* <A>(
        schema: Schema.Decoder<A>,
        method: HttpMethod,
        path: string,
        options: { readonly body?: unknown; readonly urlParams?: Record<string, string> } = {}
      ): Effect.fn.Return<VideoAnswer<A>, CallError> {
        yield* Effect.annotateCurrentSpan({ method, path })
        let request = HttpClientRequest.make(method)(`${url}${path}`, {
          acceptJson: true,
          ...(options.urlParams === undefined ? {} : { urlParams: options.urlParams })
        })
        if (options.body !== undefined) request = HttpClientRequest.bodyJsonUnsafe(request, options.body)
        const response = yield* send(request)
        const text = yield* readBody(response)
        const status = response.status
        if (status >= 400) return yield* rejection(url, status, text)
        const parsed = parseJson(text)
        if (Result.isFailure(parsed))
          return yield* new UnexpectedResponse({ url, status, detail: "the body is not JSON" })
        const decoded = Schema.decodeUnknownResult(schema)(parsed.success)
        if (Result.isFailure(decoded)) {
          return yield* new UnexpectedResponse({ url, status, detail: firstLine(decoded.failure.message) })
        }
        return { status, body: parsed.success, value: decoded.success }
      },
      Effect.timeoutOrElse({
        duration: requestTimeout,
        orElse: () => Effect.fail(unreachable(`no answer within ${Duration.format(requestTimeout)}`))
      })
    )

    const download = Effect.fn("VideoApi.download")(function* (id: string, path: string) {
      const fs = yield* FileSystem.FileSystem
      const response = yield* send(HttpClientRequest.get(`${url}/v1/videos/${encodeURIComponent(id)}/content`))
      if (response.status >= 400) return yield* rejection(url, response.status, yield* readBody(response))
      const partial = `${path}.part`
      const failed = (reason: string) => new VideoDownloadFailed({ path, reason })
      yield* response.stream.pipe(
        Stream.mapError((error) => failed(describeNetworkFailure(error.reason.cause ?? error))),
        Stream.run(fs.sink(partial).pipe(Sink.mapError((error) => failed(error.message)))),
        Effect.onError(() => Effect.ignore(fs.remove(partial)))
      )
      yield* fs.rename(partial, path).pipe(Effect.mapError((error) => failed(error.message)))
      const info = yield* fs.stat(path).pipe(Effect.mapError((error) => failed(error.message)))
      return Number(info.size)
    })

    return {
      url,
      submit: (body) => call(VideoTask, "POST", "/v1/videos", { body }),
      get: (id) => call(VideoTask, "GET", `/v1/videos/${encodeURIComponent(id)}`),
      list: (query) =>
        call(VideoList, "GET", "/v1/videos", {
          urlParams: {
            ...(query.limit === undefined ? {} : { limit: String(query.limit) }),
            ...(query.after === undefined ? {} : { after: query.after })
          }
        }),
      download
    } satisfies VideoApiShape
  })

export class VideoApi extends Context.Service<VideoApi, VideoApiShape>()("tollgate/cli/VideoApi") {
  /** Reads the `--url` setting and `TOLLGATE_API_KEY`; needs an `HttpClient`. */
  static readonly layer = Layer.effect(
    VideoApi,
    Effect.gen(function* () {
      const url = yield* ServerUrl
      const apiKey = yield* loadApiKey
      return yield* makeVideoApi({ url, apiKey })
    })
  )
}
