/**
 * The built-in transcription family (`transcription`): OpenAI's `POST /audio/transcriptions`, sent as multipart with
 * the client's file (its filename kept: the upstream reads the extension) and options.
 *
 * `json`/`verbose_json` answers are parsed, and their `usage` (`{type:"duration"}` or `{type:"tokens"}`, or
 * verbose_json's `duration`) is what is billed. `srt`/`vtt` are plain text that carry no usage, so they are billed by
 * the gateway's measurement of the file. `text` is asked of the upstream as `json` (every model speaks it) and
 * answered as the transcript plus a newline, as OpenAI writes it, so that it is billed by the upstream's usage too.
 *
 * Prices: `perSecond` of audio, and/or `input`/`output` per 1M tokens. The hold assumes the most a call can use:
 * - seconds: the measured length (or a bound from the file size) rounded up to a whole second, since upstreams round
 *   the length they bill (the simulator to a tenth, with a 0.1 s minimum);
 * - input tokens: {@link AUDIO_TOKENS_PER_SECOND} per second of audio (OpenAI's rate for audio input) + the prompt;
 * - output tokens: {@link OUTPUT_TOKENS_BASE} + {@link OUTPUT_TOKENS_PER_SECOND} per second: about twice the tokens of
 *   fast speech (~4 words/s), so a dense transcript still fits.
 * Settling uses reported values; what the upstream did not report falls back to the measured length (tokens at the
 * same per-second rates, without the margins).
 */
import { Effect } from "effect"
import type { UpstreamClient } from "../../adapters/upstream/UpstreamClient.ts"
import { OpenAiPaths } from "../../adapters/upstream/UpstreamEndpoints.ts"
import type { UpstreamError } from "../../adapters/upstream/UpstreamError.ts"
import { costPerMillion } from "../../domain/Money.ts"
import type { UpstreamConfig, PriceKeys } from "../ModelPlugin.ts"
import { ceilDiv, type Micros } from "../../domain/Money.ts"
import type { FormPart } from "../dedicated-image/Multipart.ts"
import { encodeMultipart } from "../dedicated-image/Multipart.ts"
import {
  type PluginFailure,
  type PluginModel,
  type PricingRule,
  type TranscriptionCall,
  type TranscriptionPlugin,
  type TranscriptionPricingInput,
  type TranscriptionReply,
  type TranscriptionUsage,
  pluginFailure
} from "../ModelPlugin.ts"
import { asNumber, asRecord, asString, isRecord } from "../text/convert/json.ts"
import { upstreamsFor, onUpstream } from "../UpstreamFailure.ts"

export const TRANSCRIPTION_PLUGIN_ID = "transcription"

/** Input tokens per second of audio (OpenAI bills audio input at one token per 100 ms). */
export const AUDIO_TOKENS_PER_SECOND = 10
/** Output tokens per second of audio assumed for the hold: about twice fast speech. */
export const OUTPUT_TOKENS_PER_SECOND = 10
/** Output tokens any transcript may take regardless of length (punctuation, a short clip's sentence). */
export const OUTPUT_TOKENS_BASE = 64

/** Seconds from an upstream's float, in whole milliseconds (rounded up, ignoring float noise such as 12.4 × 1000). */
export const millisOfSeconds = (seconds: number): number => Math.max(0, Math.ceil(seconds * 1000 - 1e-6))

const wholeSeconds = (millis: number): number => Math.ceil(Math.max(0, millis) / 1000)

/** perSecond × milliseconds / 1000, rounded up to the micro-dollar. */
const secondsCost = (millis: number, perSecond: Micros): Micros =>
  ceilDiv(BigInt(Math.ceil(Math.max(0, millis))) * perSecond, 1000n)

const tokenCost = (input: number, output: number, model: PluginModel): Micros =>
  costPerMillion(BigInt(Math.ceil(input)), model.pricing.input ?? 0n) +
  costPerMillion(BigInt(Math.ceil(output)), model.pricing.output ?? 0n)

export const transcriptionPricing: PricingRule<
  TranscriptionPricingInput,
  TranscriptionUsage & { readonly measuredMillis: number }
> = {
  estimate: ({ audioMillis, promptTokens }: TranscriptionPricingInput, model) => {
    const seconds = wholeSeconds(audioMillis)
    return (
      secondsCost(seconds * 1000, model.pricing.perSecond ?? 0n) +
      tokenCost(
        seconds * AUDIO_TOKENS_PER_SECOND + promptTokens,
        OUTPUT_TOKENS_BASE + seconds * OUTPUT_TOKENS_PER_SECOND,
        model
      )
    )
  },
  price: (usage, model) => {
    const millis = usage.audioMillis ?? usage.measuredMillis
    const input = usage.inputTokens ?? Math.ceil((usage.measuredMillis * AUDIO_TOKENS_PER_SECOND) / 1000)
    const output = usage.outputTokens ?? Math.ceil((usage.measuredMillis * OUTPUT_TOKENS_PER_SECOND) / 1000)
    return secondsCost(millis, model.pricing.perSecond ?? 0n) + tokenCost(input, output, model)
  }
}

const count = (value: unknown): number | null => {
  const n = asNumber(value)
  return n === undefined || n < 0 ? null : Math.ceil(n)
}

/** What a JSON answer says it used: `usage` first, then verbose_json's top-level `duration`. */
export const usageOfJson = (body: unknown): TranscriptionUsage => {
  const record = asRecord(body)
  const usage = asRecord(record.usage)
  const reportedSeconds = usage.type === "duration" ? asNumber(usage.seconds) : undefined
  const duration = reportedSeconds ?? asNumber(record.duration)
  const tokens = usage.type === "tokens"
  return {
    audioMillis: duration === undefined || duration < 0 ? null : millisOfSeconds(duration),
    inputTokens: tokens ? count(usage.input_tokens) : null,
    outputTokens: tokens ? count(usage.output_tokens) : null
  }
}

/** The format asked of the upstream: `text` goes as `json`, so its usage comes back. */
const upstreamFormat = (format: TranscriptionCall["request"]["responseFormat"]) => (format === "text" ? "json" : format)

export const transcriptionForm = (
  call: TranscriptionCall
): { readonly body: Uint8Array; readonly contentType: string } => {
  const { request } = call
  const field = (name: string, value: string | number | undefined): ReadonlyArray<FormPart> =>
    value === undefined ? [] : [{ _tag: "Field", name, value: String(value) }]
  return encodeMultipart([
    {
      _tag: "File",
      name: "file",
      filename: request.file.filename,
      contentType: request.file.mimeType,
      data: request.file.data
    },
    ...field("model", call.model.upstreamModel),
    ...field("language", request.language),
    ...field("prompt", request.prompt),
    ...field("response_format", upstreamFormat(request.responseFormat)),
    ...field("temperature", request.temperature),
    ...request.timestampGranularities.flatMap((granularity) => field("timestamp_granularities[]", granularity))
  ])
}

const NO_USAGE: TranscriptionUsage = { audioMillis: null, inputTokens: null, outputTokens: null }

/** The prices this family bills by (the operator config may set no others). */
export const TRANSCRIPTION_PRICE_KEYS: PriceKeys = { allowed: ["perSecond", "input", "output"], required: [] }

export const makeTranscriptionPlugin = (client: UpstreamClient["Service"]): TranscriptionPlugin => {
  const attempt = (
    call: TranscriptionCall,
    upstream: UpstreamConfig,
    form: { readonly body: Uint8Array; readonly contentType: string }
  ): Effect.Effect<TranscriptionReply, UpstreamError | PluginFailure> =>
    Effect.gen(function* () {
      const response = yield* client.request({
        upstream,
        method: "POST",
        path: OpenAiPaths.audioTranscriptions,
        headers: { "content-type": form.contentType },
        body: form.body,
        signal: call.signal
      })
      switch (call.request.responseFormat) {
        case "json":
        case "verbose_json": {
          const value = yield* response.body.json
          return { body: { _tag: "Json", value }, usage: usageOfJson(value) } satisfies TranscriptionReply
        }
        case "text": {
          const value = yield* response.body.json
          const text = isRecord(value) ? asString(value.text) : undefined
          if (text === undefined) {
            return yield* Effect.fail(
              pluginFailure("unavailable", "the upstream sent a malformed response: no transcript text")
            )
          }
          return { body: { _tag: "Text", text: `${text}\n` }, usage: usageOfJson(value) } satisfies TranscriptionReply
        }
        case "srt":
        case "vtt": {
          const text = yield* response.body.text
          return { body: { _tag: "Text", text }, usage: NO_USAGE } satisfies TranscriptionReply
        }
      }
    })

  const transcribe = (call: TranscriptionCall): Effect.Effect<TranscriptionReply, PluginFailure> =>
    Effect.suspend(() => {
      const form = transcriptionForm(call)
      return onUpstream(call.model, upstreamsFor(call.model, ["openai"]), "transcription", (upstream) =>
        attempt(call, upstream, form)
      )
    })

  return {
    specificationVersion: "v1",
    id: TRANSCRIPTION_PLUGIN_ID,
    family: "transcription",
    kind: "transcription",
    pricingKeys: TRANSCRIPTION_PRICE_KEYS,
    pricing: transcriptionPricing,
    transcribe
  }
}
