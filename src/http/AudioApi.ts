/**
 * OpenAI's audio API (docs/api/embeddings-and-audio.md): `POST /v1/audio/transcriptions` (multipart as the official SDKs send
 * it; `text`, `srt` and `vtt` answer plain text, `json` and `verbose_json` JSON) and `POST /v1/audio/speech` (JSON in,
 * the audio bytes streamed out as the upstream produces them, with its content type).
 *
 * An upload over the audio limit (`maxUploadBytes`, 25 MiB by default like OpenAI's) is refused with a 413 before
 * anything is held: on its Content-Length first, then on the bytes actually received.
 */
import { clip } from "../domain/Quoted.ts"
import { Context, Effect, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { AudioGateway } from "../app/AudioGateway.ts"
import {
  SPEECH_FORMATS,
  type SpeechFormat,
  type SpeechRequest,
  TRANSCRIPTION_FORMATS,
  type TranscriptionFormat,
  type TranscriptionRequest
} from "../plugins/ModelPlugin.ts"
import { type ApiError, apiError, badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { type Fields, optionalFlag, optionalNumber, optionalString } from "./FormFields.ts"
import { parseFormData, readBytes, readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"
import { streamedBody } from "./StreamedReply.ts"

/** OpenAI's own limit on transcription uploads. */
export const DEFAULT_MAX_AUDIO_BYTES = 25 * 1024 * 1024
/** Room for the multipart framing and the text fields around the file. */
const MULTIPART_SLACK_BYTES = 64 * 1024
const MAX_SPEECH_CHARACTERS = 4096

export class AudioSettings extends Context.Service<AudioSettings, { readonly maxUploadBytes: number }>()(
  "tollgate/http/AudioSettings"
) {
  static readonly layer = (maxUploadBytes: number = DEFAULT_MAX_AUDIO_BYTES) =>
    Layer.succeed(AudioSettings, AudioSettings.of({ maxUploadBytes }))
}

const fileTooLarge = (limit: number) =>
  apiError(413, `the audio file is larger than the ${limit}-byte limit`, {
    code: "file_too_large",
    param: "file"
  })

const oneOf = <A extends string>(
  fields: Fields,
  name: string,
  values: ReadonlyArray<A>,
  fallback: A
): Effect.Effect<A, ApiError> =>
  Effect.flatMap(optionalString(fields, name), (value) =>
    value === undefined
      ? Effect.succeed(fallback)
      : (values as ReadonlyArray<string>).includes(value)
        ? Effect.succeed(value as A)
        : Effect.fail(badRequest(`${name}: expected one of ${values.join(", ")}, got '${clip(value)}'`, name))
  )

const requiredModel = (fields: Fields) =>
  Effect.flatMap(optionalString(fields, "model"), (model) =>
    model === undefined ? Effect.fail(badRequest("model: is required", "model")) : Effect.succeed(model)
  )

// ---------------------------------------------------------------------------------------------------------------------
// Transcriptions

const isFile = (value: unknown): value is File => typeof value === "object" && value !== null && "arrayBuffer" in value

const GRANULARITY_FIELDS = ["timestamp_granularities[]", "timestamp_granularities"]

interface Upload {
  readonly fields: Fields
  readonly granularities: ReadonlyArray<string>
  readonly file: File
}

/** The multipart body, within the audio limit: one `file` part, string fields, repeated `timestamp_granularities[]`. */
const readUpload = (contentType: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { maxUploadBytes } = yield* AudioSettings
    const { maxBodyBytes } = yield* HttpSettings
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > maxUploadBytes + MULTIPART_SLACK_BYTES) return yield* fileTooLarge(maxUploadBytes)
    const bytes = yield* readBytes(request, {
      maxBodyBytes: Math.min(maxBodyBytes, maxUploadBytes + MULTIPART_SLACK_BYTES)
    }).pipe(Effect.mapError((error) => (error.status === 413 ? fileTooLarge(maxUploadBytes) : error)))
    const form = yield* parseFormData(bytes, contentType)
    const fields: Record<string, unknown> = {}
    const granularities: Array<string> = []
    let file: File | undefined
    for (const [name, value] of form.entries()) {
      if (name === "file") {
        if (!isFile(value)) return yield* badRequest("file: expected an audio file upload, not a text field", "file")
        if (file !== undefined) return yield* badRequest("file: exactly one file is accepted", "file")
        file = value
      } else if (isFile(value)) {
        return yield* badRequest(`${name}: unexpected file part; only 'file' carries a file`, name)
      } else if (GRANULARITY_FIELDS.includes(name)) {
        granularities.push(value)
      } else {
        fields[name] = value
      }
    }
    if (file === undefined) return yield* badRequest("file: is required (the audio to transcribe)", "file")
    if (file.size === 0) return yield* badRequest("file: the audio file is empty", "file")
    if (file.size > maxUploadBytes) return yield* fileTooLarge(maxUploadBytes)
    return { fields, granularities, file } satisfies Upload
  })

const transcriptionRequest = (upload: Upload) =>
  Effect.gen(function* () {
    const { fields } = upload
    const model = yield* requiredModel(fields)
    if ((yield* optionalFlag(fields, "stream")) === true) {
      return yield* badRequest("stream: streamed transcription is not supported; omit `stream`", "stream")
    }
    const responseFormat: TranscriptionFormat = yield* oneOf(fields, "response_format", TRANSCRIPTION_FORMATS, "json")
    const granularities: Array<"word" | "segment"> = []
    for (const value of upload.granularities) {
      if (value !== "word" && value !== "segment") {
        return yield* badRequest(
          `timestamp_granularities[]: expected 'word' or 'segment', got '${clip(value)}'`,
          "timestamp_granularities"
        )
      }
      if (!granularities.includes(value)) granularities.push(value)
    }
    if (granularities.length > 0 && responseFormat !== "verbose_json") {
      return yield* badRequest(
        "timestamp_granularities[]: timestamps need response_format 'verbose_json'",
        "timestamp_granularities"
      )
    }
    // Edge: the Fetch API's File is promise-based.
    const data = new Uint8Array(yield* Effect.promise(() => upload.file.arrayBuffer()))
    const request: TranscriptionRequest = {
      file: {
        data,
        filename: upload.file.name === "" ? "audio" : upload.file.name,
        mimeType: upload.file.type === "" ? "application/octet-stream" : upload.file.type
      },
      language: yield* optionalString(fields, "language"),
      prompt: yield* optionalString(fields, "prompt"),
      responseFormat,
      temperature: yield* optionalNumber(fields, "temperature", 0, 1),
      timestampGranularities: granularities
    }
    return { model, request }
  })

// The key is checked before the body is read, so an anonymous client cannot make the gateway take 25 MiB.
const transcriptions = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const contentType = (yield* HttpServerRequest.HttpServerRequest).headers["content-type"] ?? ""
  if (!/^multipart\/form-data/i.test(contentType)) {
    return yield* apiError(415, "expected a multipart/form-data body carrying the audio as `file`", {
      code: "unsupported_media_type"
    })
  }
  const { model, request } = yield* transcriptionRequest(yield* readUpload(contentType))
  const reply = yield* (yield* AudioGateway).transcribe({ model, request, key, requestId: yield* RequestId })
  return reply.body._tag === "Json"
    ? json(reply.body.value)
    : HttpServerResponse.text(reply.body.text, { contentType: "text/plain; charset=utf-8" })
})

// ---------------------------------------------------------------------------------------------------------------------
// Speech

const readVoice = (fields: Fields): Effect.Effect<string, ApiError> => {
  const voice = fields.voice
  if (typeof voice === "string" && voice !== "") return Effect.succeed(voice)
  if (typeof voice === "object" && voice !== null && !Array.isArray(voice)) {
    const id = (voice as Fields).id
    if (typeof id === "string" && id !== "") return Effect.succeed(id)
  }
  return Effect.fail(badRequest('voice: is required (a voice name such as "alloy", or {"id": "voice_…"})', "voice"))
}

const speechRequest = (fields: Fields) =>
  Effect.gen(function* () {
    const model = yield* requiredModel(fields)
    const input = fields.input
    if (typeof input !== "string" || input === "") {
      return yield* badRequest("input: is required (the text to speak)", "input")
    }
    const characters = [...input].length
    if (characters > MAX_SPEECH_CHARACTERS) {
      return yield* badRequest(
        `input: at most ${MAX_SPEECH_CHARACTERS} characters are accepted, got ${characters}`,
        "input"
      )
    }
    const streamFormat = yield* optionalString(fields, "stream_format")
    if (streamFormat !== undefined && streamFormat !== "audio") {
      return yield* badRequest("stream_format: only 'audio' is supported; omit `stream_format`", "stream_format")
    }
    const request: SpeechRequest = {
      input,
      voice: yield* readVoice(fields),
      responseFormat: yield* oneOf<SpeechFormat>(fields, "response_format", SPEECH_FORMATS, "mp3"),
      speed: yield* optionalNumber(fields, "speed", 0.25, 4),
      instructions: yield* optionalString(fields, "instructions")
    }
    return { model, request }
  })

const speech = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* readJson(yield* HttpServerRequest.HttpServerRequest, yield* HttpSettings, "forwarded")
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* badRequest("the request body must be a JSON object")
  }
  const { model, request } = yield* speechRequest(body as Fields)
  const audio = yield* (yield* AudioGateway).speak({ model, request, key, requestId: yield* RequestId })
  // Settled when the audio ends: what it cost follows it in trailers.
  return yield* streamedBody(audio.body, {
    contentType: audio.contentType,
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/audio/transcriptions", transcriptions, "openai"),
  route("POST", "/v1/audio/speech", speech, "openai")
)
