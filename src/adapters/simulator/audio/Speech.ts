/**
 * OpenAI's `POST /v1/audio/speech`: real audio from `SpeechAudio.ts`. `wav` and `pcm` are
 * written directly with a content length; `mp3`, `opus` (Ogg), `aac` (ADTS) and `flac` go through the bundled ffmpeg
 * and stream chunked as ffmpeg produces them. A format whose encoder the binary lacks answers 400 naming it.
 * `instructions` is accepted and ignored; `stream_format: "sse"` is not simulated (400).
 */
import { Readable } from "node:stream"
import { invalid, invalidValue, requiredText, servedModel } from "../OpenAIReplies.ts"
import { field, stringField } from "../Json.ts"
import { refuseOpenAIRequest } from "../OpenAIChat.ts"
import type { SimContext, SimReply, SimRequest } from "../SimResponse.ts"
import { type AudioReply, asyncReply, streamReply } from "./AudioReply.ts"
import type { AudioTools } from "./AudioTools.ts"
import { flacTotalSamplesPatch, planSpeech, SAMPLE_RATE, speechPcm, wavHeader } from "./SpeechAudio.ts"

export const SPEECH_PATH = "/v1/audio/speech"

const MAX_INPUT_CHARS = 4096
export const VOICES = [
  "alloy",
  "ash",
  "ballad",
  "coral",
  "echo",
  "fable",
  "onyx",
  "nova",
  "sage",
  "shimmer",
  "verse",
  "marin",
  "cedar"
]

interface Encoded {
  readonly contentType: string
  readonly encoder: string
  readonly args: ReadonlyArray<string>
}

const ENCODED: Readonly<Record<string, Encoded>> = {
  mp3: { contentType: "audio/mpeg", encoder: "libmp3lame", args: ["-c:a", "libmp3lame", "-b:a", "64k", "-f", "mp3"] },
  opus: { contentType: "audio/ogg", encoder: "libopus", args: ["-c:a", "libopus", "-b:a", "32k", "-f", "ogg"] },
  aac: { contentType: "audio/aac", encoder: "aac", args: ["-c:a", "aac", "-b:a", "64k", "-f", "adts"] },
  flac: { contentType: "audio/flac", encoder: "flac", args: ["-c:a", "flac", "-f", "flac"] }
}
const FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"]

/** `POST /v1/audio/speech`. */
export const createSpeech = (request: SimRequest, context: SimContext, tools: AudioTools): SimReply | AudioReply => {
  const refused = refuseOpenAIRequest(request, context)
  if (refused !== undefined) return refused
  const body = request.body
  const model = servedModel(body, context.models)
  if (typeof model !== "string") return model
  const input = requiredText(body, "input", MAX_INPUT_CHARS)
  if (typeof input !== "string") return input
  const rawVoice = field(body, "voice")
  if (rawVoice === undefined || rawVoice === null) {
    return invalid("Missing required parameter: 'voice'.", "voice", "missing_required_parameter")
  }
  const customVoice = stringField(rawVoice, "id")
  const voice = typeof rawVoice === "string" ? rawVoice : customVoice
  if (voice === undefined || (typeof rawVoice === "string" && !VOICES.includes(rawVoice))) {
    return invalidValue("voice", typeof rawVoice === "string" ? rawVoice : JSON.stringify(rawVoice), VOICES)
  }
  const format = field(body, "response_format") ?? "mp3"
  if (typeof format !== "string" || !FORMATS.includes(format)) return invalidValue("response_format", format, FORMATS)
  const rawSpeed = field(body, "speed") ?? 1
  if (typeof rawSpeed !== "number" || !Number.isFinite(rawSpeed) || rawSpeed < 0.25 || rawSpeed > 4) {
    return invalid(
      `Invalid 'speed': expected a number between 0.25 and 4.0, but got ${String(rawSpeed)} instead.`,
      "speed",
      "invalid_value"
    )
  }
  const streamFormat = field(body, "stream_format") ?? "audio"
  if (streamFormat === "sse") {
    return invalid("The simulator does not stream speech as SSE; send stream_format: 'audio'.", "stream_format")
  }
  if (streamFormat !== "audio") return invalidValue("stream_format", streamFormat, ["audio", "sse"])

  const plan = planSpeech(input, voice, rawSpeed)
  if (format === "pcm" || format === "wav") {
    const header = format === "wav" ? [wavHeader(plan.totalSamples)] : []
    const length = plan.totalSamples * 2 + (format === "wav" ? 44 : 0)
    return streamReply(
      { "content-type": format === "wav" ? "audio/wav" : "audio/pcm", "content-length": String(length) },
      () => {
        const pcm = speechPcm(plan)
        const body = Readable.from(
          (function* () {
            yield* header
            yield* pcm
          })()
        )
        return { body, stop: () => body.destroy() }
      }
    )
  }
  const encoded = ENCODED[format]!
  return asyncReply(() =>
    tools.encoders().then((encoders) =>
      encoders.has(encoded.encoder)
        ? streamReply({ "content-type": encoded.contentType }, () => {
            const encoding = tools.encode(speechPcm(plan), SAMPLE_RATE, encoded.args)
            if (format !== "flac") return encoding
            const patched = encoding.body.pipe(flacTotalSamplesPatch(plan.totalSamples))
            encoding.body.once("error", (error) => patched.destroy(error))
            return { body: patched, stop: encoding.stop }
          })
        : invalid(
            `The simulator cannot produce response_format '${format}': its ffmpeg has no '${encoded.encoder}' encoder.`,
            "response_format",
            "unsupported_value"
          )
    )
  )
}
