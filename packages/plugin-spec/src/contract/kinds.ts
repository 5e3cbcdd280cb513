/**
 * The contract suites of the built-in kinds: each maps its kind's calls onto the shared checks. The fixtures say what
 * to call and with which pricing input; the suite checks shape, pricing, replies, abort and failures.
 */
import { Effect } from "effect"
import type fc from "fast-check"
import type { FailureReason, PluginFailure, PluginModel } from "../common.ts"
import type { EmbeddingsCall, EmbeddingsPlugin } from "../embeddings.ts"
import type { ImageUsage, ImagesCall, ImagesPlugin, ImagesPricingInput } from "../images.ts"
import type { SpeechCall, SpeechPlugin } from "../speech.ts"
import type { TranscriptionCall, TranscriptionPlugin, TranscriptionPricingInput } from "../transcription.ts"
import type { VideoRequest, VideoUsage, VideosPlugin } from "../videos.ts"
import { describeContract } from "./engine.ts"

type Signal = { readonly signal: AbortSignal }

interface KindFixtures<In, U, Call> {
  readonly models: ReadonlyArray<PluginModel>
  readonly inputs: fc.Arbitrary<In>
  readonly usageWithin: (input: In, model: PluginModel) => fc.Arbitrary<U>
  /** Calls to make (without their signal), with the pricing input each is estimated by. */
  readonly calls: ReadonlyArray<{ readonly name: string; readonly call: Omit<Call, "signal">; readonly input: In }>
  /** Calls that must fail, each with the reason it must fail with (a refusing upstream: `unavailable`). */
  readonly failing?: ReadonlyArray<{
    readonly name: string
    readonly reason: FailureReason
    readonly call: Omit<Call, "signal">
  }>
}

/** A reply's usage, as a value or an effect (a reader may refuse a malformed reply). */
type UsageOf<U> = Effect.Effect<U, PluginFailure> | U

const lift = <U>(value: UsageOf<U>): Effect.Effect<U, PluginFailure> =>
  Effect.isEffect(value) ? (value as Effect.Effect<U, PluginFailure>) : Effect.succeed(value as U)

const calls = <In, U, Call extends Signal & { readonly model: PluginModel }, R>(
  fixtures: KindFixtures<In, U, Call>,
  run: (call: Call) => Effect.Effect<R, PluginFailure>,
  usageOf: (reply: R, call: Call) => UsageOf<U>
) => ({
  models: fixtures.models,
  inputs: fixtures.inputs,
  usageWithin: fixtures.usageWithin,
  calls: fixtures.calls.map(({ name, call, input }) => ({
    name,
    model: call.model,
    input,
    run: (signal: AbortSignal) => {
      const full = { ...call, signal } as Call
      return Effect.flatMap(run(full), (reply) => lift(usageOf(reply, full)))
    }
  })),
  failing: (fixtures.failing ?? []).map(({ name, reason, call }) => ({
    name,
    reason,
    run: (signal: AbortSignal) => run({ ...call, signal } as Call)
  }))
})

export const describeImagesPluginContract = (
  name: string,
  plugin: ImagesPlugin,
  fixtures: KindFixtures<ImagesPricingInput, ImageUsage, ImagesCall>
) =>
  describeContract(
    "images",
    name,
    plugin,
    calls(fixtures, (call) => (call.operation === "edit" ? plugin.edit(call) : plugin.generate(call)), (reply) => reply.usage)
  )

export const describeEmbeddingsPluginContract = (
  name: string,
  plugin: EmbeddingsPlugin,
  fixtures: KindFixtures<Parameters<EmbeddingsPlugin["pricing"]["estimate"]>[0], { readonly promptTokens: number }, EmbeddingsCall>
) =>
  describeContract(
    "embeddings",
    name,
    plugin,
    calls(
      fixtures,
      plugin.embed,
      (reply, call) =>
        reply.vectors.length === call.request.inputs.length
          ? { promptTokens: reply.promptTokens }
          : Effect.fail({ _tag: "PluginFailure", reason: "unavailable", message: "one vector per input expected" } as const)
    )
  )

export const describeTranscriptionPluginContract = (
  name: string,
  plugin: TranscriptionPlugin,
  fixtures: KindFixtures<
    TranscriptionPricingInput,
    Parameters<TranscriptionPlugin["pricing"]["price"]>[0],
    TranscriptionCall
  >
) =>
  describeContract(
    "transcription",
    name,
    plugin,
    calls(
      fixtures,
      plugin.transcribe,
      (reply, call) => ({ ...reply.usage, measuredMillis: call.measuredMillis ?? 0 })
    )
  )

export const describeSpeechPluginContract = (
  name: string,
  plugin: SpeechPlugin,
  fixtures: KindFixtures<
    Parameters<SpeechPlugin["pricing"]["estimate"]>[0],
    Parameters<SpeechPlugin["pricing"]["price"]>[0],
    SpeechCall
  > & { readonly usageOf: (call: SpeechCall) => Parameters<SpeechPlugin["pricing"]["price"]>[0] }
) =>
  describeContract(
    "speech",
    name,
    plugin,
    calls(fixtures, plugin.speak, (_reply, call) => fixtures.usageOf(call))
  )

/** Videos: `create` must answer; pricing is checked for the request's tokens and any usage up to them. */
export const describeVideosPluginContract = (
  name: string,
  plugin: VideosPlugin,
  fixtures: KindFixtures<VideoRequest, VideoUsage, Parameters<VideosPlugin["create"]>[0]> & {
    readonly usageOf: (request: VideoRequest) => VideoUsage
  }
) =>
  describeContract(
    "videos",
    name,
    plugin,
    calls(fixtures, plugin.create, (_created, call) => fixtures.usageOf(call.request))
  )
