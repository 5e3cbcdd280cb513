/**
 * OpenAI's `POST /v1/audio/transcriptions` (multipart). The duration comes from the upload:
 * a WAV header is read directly, any other container is decoded by the bundled ffmpeg; an empty or unreadable file is
 * a 400 like the real API's. The text is deterministic (`TranscriptText.ts`). `whisper*` models speak every response
 * format and bill by duration; other models (`gpt-4o-transcribe`, ...) answer `json` or `text` and bill tokens:
 * 10 audio tokens per second (rounded up), the prompt's text tokens, and the transcript's tokens as output.
 */
import { MultipartParser } from "effect/http"
import { countText } from "../../tokenizer/Tokenizer.ts"
import { openAIError } from "../ErrorEnvelopes.ts"
import { invalid, modelNotFound } from "../OpenAIReplies.ts"
import { checkOpenAIAuth } from "../OpenAIChat.ts"
import type { RawSimRequest } from "../images/EditInputs.ts"
import { header, json, type SimContext, type SimReply } from "../SimResponse.ts"
import { type AudioReply, asyncReply, type StreamReply, textReply } from "./AudioReply.ts"
import type { AudioTools } from "./AudioTools.ts"
import { segmentTokens, type Transcript, toSrt, toVtt, transcribe } from "./TranscriptText.ts"
import { isRiffWave, readWav } from "./WavFile.ts"

export const TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"

const MAX_FILE_BYTES = 25 * 1024 * 1024
const MIN_SECONDS = 0.1
const AUDIO_TOKENS_PER_SECOND = 10
const EXTENSIONS = ["flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"]
const FORMATS = ["json", "text", "srt", "verbose_json", "vtt", "diarized_json"]
const LANGUAGES: Readonly<Record<string, string>> = {
  en: "english",
  de: "german",
  fr: "french",
  es: "spanish",
  it: "italian",
  pt: "portuguese",
  nl: "dutch",
  ru: "russian",
  ja: "japanese",
  ko: "korean",
  zh: "chinese"
}

const corrupted = (): SimReply => invalid("Audio file might be corrupted or unsupported", "file", "invalid_value")

interface Upload {
  readonly fields: Readonly<Record<string, string>>
  readonly granularities: ReadonlyArray<string>
  readonly file: { readonly bytes: Uint8Array; readonly filename: string } | undefined
}

const readMultipart = (request: RawSimRequest): Upload | string => {
  const fields: Record<string, string> = {}
  const granularities: Array<string> = []
  let file: Upload["file"]
  let failure: string | undefined
  const parser = MultipartParser.make({
    headers: { "content-type": header(request, "content-type") ?? "" },
    onField: (info, value) => {
      const text = MultipartParser.decodeField(info, value)
      if (info.name === "timestamp_granularities[]" || info.name === "timestamp_granularities") granularities.push(text)
      else fields[info.name] = text
    },
    onFile: (info) => {
      const chunks: Array<Uint8Array> = []
      return (chunk) => {
        if (chunk !== null) {
          chunks.push(chunk)
          return
        }
        if (info.name === "file") file = { bytes: Buffer.concat(chunks), filename: info.filename ?? "" }
        else fields[info.name] = Buffer.concat(chunks).toString("utf8")
      }
    },
    onError: (error) => {
      failure ??= error._tag
    },
    onDone: () => {}
  })
  parser.write(request.raw)
  parser.end()
  return failure ?? { fields, granularities, file }
}

interface Options {
  readonly model: string
  readonly whisper: boolean
  readonly format: string
  readonly language: string | undefined
  readonly prompt: string
  readonly temperature: number
  readonly words: boolean
}

const reply = (options: Options, transcript: Transcript): SimReply | StreamReply => {
  const seconds = transcript.seconds
  const billedSeconds = Math.max(MIN_SECONDS, Math.round(seconds * 10) / 10)
  switch (options.format) {
    case "text":
      return textReply(`${transcript.text}\n`)
    case "srt":
      return textReply(toSrt(transcript))
    case "vtt":
      return textReply(toVtt(transcript))
    case "verbose_json":
      return json(200, {
        task: "transcribe",
        language: LANGUAGES[options.language ?? "en"] ?? options.language,
        duration: Math.round(seconds * 1000) / 1000,
        text: transcript.text,
        ...(options.words ? { words: transcript.words } : {}),
        segments: transcript.segments.map((segment) => ({
          id: segment.id,
          seek: Math.floor(segment.start / 30) * 3000,
          start: segment.start,
          end: segment.end,
          text: segment.text,
          tokens: segmentTokens(segment),
          temperature: options.temperature,
          avg_logprob: -0.25,
          compression_ratio: 1.2,
          no_speech_prob: 0.01
        })),
        usage: { type: "duration", seconds: billedSeconds }
      })
    default: {
      if (options.whisper)
        return json(200, { text: transcript.text, usage: { type: "duration", seconds: billedSeconds } })
      const textTokens = countText(options.prompt)
      const audioTokens = Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)
      const outputTokens = countText(transcript.text)
      return json(200, {
        text: transcript.text,
        usage: {
          type: "tokens",
          input_tokens: textTokens + audioTokens,
          input_token_details: { text_tokens: textTokens, audio_tokens: audioTokens },
          output_tokens: outputTokens,
          total_tokens: textTokens + audioTokens + outputTokens
        }
      })
    }
  }
}

const readOptions = (upload: Upload, context: SimContext): Options | SimReply => {
  const model = upload.fields.model
  if (model === undefined || model === "") return invalid("you must provide a model parameter")
  if (context.models !== undefined && !context.models.includes(model)) {
    return modelNotFound(model)
  }
  const whisper = model.startsWith("whisper")
  const format = upload.fields.response_format ?? "json"
  if (!FORMATS.includes(format)) {
    return invalid(
      `Invalid value: '${format}'. Supported values are: ${FORMATS.map((f) => `'${f}'`).join(", ")}.`,
      "response_format",
      "invalid_value"
    )
  }
  if (format === "diarized_json") {
    return invalid("The simulator does not produce diarized_json.", "response_format", "unsupported_value")
  }
  if (!whisper && format !== "json" && format !== "text") {
    return invalid(
      `response_format '${format}' is not compatible with model '${model}'. Use 'json' or 'text' instead.`,
      "response_format",
      "unsupported_value"
    )
  }
  const rawTemperature = upload.fields.temperature
  const temperature = rawTemperature === undefined ? 0 : Number(rawTemperature)
  if (!Number.isFinite(temperature) || temperature < 0 || temperature > 1) {
    return invalid(
      `Invalid 'temperature': expected a number between 0 and 1, but got ${rawTemperature} instead.`,
      "temperature",
      "invalid_value"
    )
  }
  for (const granularity of upload.granularities) {
    if (granularity !== "word" && granularity !== "segment") {
      return invalid(
        `Invalid value: '${granularity}'. Supported values are: 'word' and 'segment'.`,
        "timestamp_granularities",
        "invalid_value"
      )
    }
  }
  if (upload.granularities.length > 0 && format !== "verbose_json") {
    return invalid(
      "timestamp_granularities requires response_format=verbose_json.",
      "timestamp_granularities",
      "invalid_value"
    )
  }
  const language = upload.fields.language
  return {
    model,
    whisper,
    format,
    language: language === undefined || language === "" ? undefined : language,
    prompt: upload.fields.prompt ?? "",
    temperature,
    words: upload.granularities.includes("word")
  }
}

const fromSeconds = (options: Options, bytes: Uint8Array, seconds: number | undefined): SimReply | StreamReply => {
  if (seconds === undefined || !Number.isFinite(seconds)) return corrupted()
  if (seconds < MIN_SECONDS) {
    return invalid(
      `Audio file is too short. Minimum audio length is ${MIN_SECONDS} seconds.`,
      "file",
      "audio_too_short"
    )
  }
  return reply(options, transcribe(bytes, seconds))
}

/** `POST /v1/audio/transcriptions`. */
export const createTranscription = (
  request: RawSimRequest,
  context: SimContext,
  tools: AudioTools
): SimReply | AudioReply => {
  const unauthorized = checkOpenAIAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  if (!(header(request, "content-type") ?? "").toLowerCase().startsWith("multipart/form-data")) {
    return invalid("Invalid Content-Type header (application/json), expected multipart/form-data.")
  }
  if (request.raw.length > MAX_FILE_BYTES + 1024 * 1024) {
    return json(413, openAIError(413, `Maximum content size limit (${MAX_FILE_BYTES}) exceeded.`))
  }
  const upload = readMultipart(request)
  if (typeof upload === "string") return invalid(`Could not parse the multipart form (${upload}).`)
  if (upload.file === undefined) {
    return invalid("Missing required parameter: 'file'.", "file", "missing_required_parameter")
  }
  const options = readOptions(upload, context)
  if (!("whisper" in options)) return options
  const file = upload.file
  const extension = (/\.([^./]+)$/.exec(file.filename)?.[1] ?? "").toLowerCase()
  if (!EXTENSIONS.includes(extension)) {
    return invalid(`Invalid file format. Supported formats: ${JSON.stringify(EXTENSIONS)}`, "file", "invalid_value")
  }
  if (file.bytes.length === 0) return corrupted()
  if (isRiffWave(file.bytes)) return fromSeconds(options, file.bytes, readWav(file.bytes)?.seconds)
  return asyncReply(() =>
    tools.decodedSeconds(file.bytes, extension).then((seconds) => fromSeconds(options, file.bytes, seconds))
  )
}
