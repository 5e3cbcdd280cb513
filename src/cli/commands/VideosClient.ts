/**
 * The public video API (`/v1/videos`) as `tollgate videos` calls it, with an API key rather than the admin token.
 * The key comes only from `TOLLGATE_API_KEY` (argv shows up in `ps` and shell history) and stays `Redacted`.
 */
import { Config, Context, Effect, FileSystem, Layer, Option, Redacted, Schema, Sink, Stream } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import type { ServerUnreachable, UnexpectedResponse } from "../CliErrors.ts"
import { ServerUrl } from "../CliSettings.ts"
import {
  describeNetworkFailure,
  type JsonAnswer,
  makeJsonCall,
  readBody,
  rejection as envelopeRejection
} from "../JsonCall.ts"

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

export type VideoAnswer<A> = JsonAnswer<A>

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

const apiKeyFromEnv = Config.option(Config.Redacted("TOLLGATE_API_KEY"))

export const loadApiKey: Effect.Effect<Redacted.Redacted<string>, ApiKeyMissing> = Effect.gen(function* () {
  const key = yield* Effect.orDie(apiKeyFromEnv)
  if (Option.isNone(key) || Redacted.value(key.value).trim() === "") return yield* new ApiKeyMissing()
  return Redacted.make(Redacted.value(key.value).trim())
})

/** An error answer as the user should read it: the envelope's message when there is one. */
export const rejection = (
  url: string,
  status: number,
  text: string
): ApiKeyRefused | VideoRequestRejected | UnexpectedResponse =>
  envelopeRejection(url, status, text, ({ message, code }) =>
    status === 401
      ? new ApiKeyRefused({ serverMessage: message })
      : new VideoRequestRejected({ status, serverMessage: message, code })
  )

export const makeVideoApi = (options: { readonly url: string; readonly apiKey: Redacted.Redacted<string> }) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const { url, apiKey } = options
    const { send, call } = makeJsonCall({
      name: "VideoApi.call",
      client,
      url,
      credential: apiKey,
      rejected: (status, text) => rejection(url, status, text)
    })

    const download = Effect.fn("VideoApi.download")(function* (id: string, path: string) {
      const fs = yield* FileSystem.FileSystem
      const response = yield* send(HttpClientRequest.get(`${url}/v1/videos/${encodeURIComponent(id)}/content`))
      if (response.status >= 400) return yield* rejection(url, response.status, yield* readBody(url, response))
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
