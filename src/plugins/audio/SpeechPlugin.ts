/**
 * The built-in speech family (`speech`): OpenAI's `POST /audio/speech` (JSON in, audio out). The audio is handed back
 * as a stream of the upstream's bytes with its content type; upstreams are tried in order until one answers with a
 * 2xx, and once the stream is returned there is no fallback.
 *
 * Priced from the input alone, so the hold is the charge: `perMillionCharacters` on the input's characters (Unicode
 * code points, {@link speechCharacters}), `input` per 1M of the gateway's input tokens, and `output` per 1M audio
 * tokens taken as {@link OUTPUT_TOKENS_PER_CHARACTER} per character (the audio's length is not known before it is
 * made: gpt-4o-mini-tts makes about 1.5 audio tokens per character of English at normal speed).
 */
import { Effect } from "effect"
import type { UpstreamClient } from "../../adapters/upstream/UpstreamClient.ts"
import { OpenAiPaths } from "../../adapters/upstream/UpstreamEndpoints.ts"
import { costPerMillion } from "../../domain/Money.ts"
import type { Micros } from "../../domain/Money.ts"
import type {
  PluginFailure,
  PluginModel,
  PricingRule,
  SpeechCall,
  SpeechFormat,
  SpeechPlugin,
  SpeechReply,
  SpeechRequest,
  PriceKeys
} from "../ModelPlugin.ts"
import { compact } from "../text/convert/json.ts"
import { upstreamsFor, onUpstream } from "../UpstreamFailure.ts"

export const SPEECH_PLUGIN_ID = "speech"

/** Audio output tokens billed per input character when a model prices `output`. */
export const OUTPUT_TOKENS_PER_CHARACTER = 2

/** The content type of each format, for upstreams that send none. */
export const SPEECH_CONTENT_TYPES: Readonly<Record<SpeechFormat, string>> = {
  mp3: "audio/mpeg",
  opus: "audio/ogg",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm"
}

const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g

/** Characters of the input as billed: code points, so an emoji or a CJK character counts once. */
export const speechCharacters = (text: string): number => text.length - (text.match(SURROGATE_PAIR)?.length ?? 0)

const speechCost = (characters: number, inputTokens: number, model: PluginModel): Micros =>
  costPerMillion(BigInt(characters), model.pricing.perMillionCharacters ?? 0n) +
  costPerMillion(BigInt(inputTokens), model.pricing.input ?? 0n) +
  costPerMillion(BigInt(characters * OUTPUT_TOKENS_PER_CHARACTER), model.pricing.output ?? 0n)

export const speechPricing: PricingRule<
  { readonly request: SpeechRequest; readonly inputTokens: number },
  { readonly characters: number; readonly inputTokens: number }
> = {
  estimate: ({ request, inputTokens }, model) => speechCost(speechCharacters(request.input), inputTokens, model),
  price: ({ characters, inputTokens }, model) => speechCost(characters, inputTokens, model)
}

export const speechBody = (call: SpeechCall): Record<string, unknown> =>
  compact({
    model: call.model.upstreamModel,
    input: call.request.input,
    voice: call.request.voice,
    response_format: call.request.responseFormat,
    speed: call.request.speed,
    instructions: call.request.instructions
  })

const headerValue = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/** The prices this family bills by (the operator config may set no others). */
export const SPEECH_PRICE_KEYS: PriceKeys = { allowed: ["perMillionCharacters", "input", "output"], required: [] }

export const makeSpeechPlugin = (client: UpstreamClient["Service"]): SpeechPlugin => {
  const speak = (call: SpeechCall): Effect.Effect<SpeechReply, PluginFailure> =>
    Effect.suspend(() => {
      const body = JSON.stringify(speechBody(call))
      return onUpstream(call.model, upstreamsFor(call.model, ["openai"]), "speech", (upstream) =>
        Effect.map(
          client.request({
            upstream,
            method: "POST",
            path: OpenAiPaths.audioSpeech,
            headers: { "content-type": "application/json" },
            body,
            signal: call.signal
          }),
          (response): SpeechReply => {
            const contentType = headerValue(response.headers["content-type"])
            return {
              contentType:
                contentType === undefined || contentType === ""
                  ? SPEECH_CONTENT_TYPES[call.request.responseFormat]
                  : contentType,
              body: response.body.chunks()
            }
          }
        )
      )
    })

  return {
    specificationVersion: "v1",
    id: SPEECH_PLUGIN_ID,
    family: "speech",
    kind: "speech",
    pricingKeys: SPEECH_PRICE_KEYS,
    pricing: speechPricing,
    speak
  }
}
