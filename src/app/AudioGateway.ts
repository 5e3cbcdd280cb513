/**
 * The audio pipelines (`/v1/audio/transcriptions`, `/v1/audio/speech`), with the images gateway's ledger discipline:
 * resolve the model to its plugin, check the key's allow-list and the plugin's kind, hold the plugin's estimate,
 * invoke, and settle — or release the whole hold when nothing was delivered.
 *
 * Transcription holds for the audio's length as measured from the upload (an upper bound from its size when it cannot
 * be measured) and settles from the upstream's reported usage. Speech is priced from its input alone, so the hold is
 * the price; the audio streams through as it arrives. An upstream that fails before the first byte costs nothing; once
 * the first byte is on its way the call is settled when the stream ends, however it ends — also when the client
 * disconnects mid-stream (the upstream has produced, and billed, the audio by then).
 */
import { CurrentTelemetry } from "./RequestTelemetry.ts"
import { Context, Effect, Exit, Layer, Stream } from "effect"
import { MediaProbe } from "./ports/MediaProbe.ts"
import { TokenCounter } from "./ports/TokenCounter.ts"
import {
  type PluginModel,
  pluginFailure,
  type SpeechPlugin,
  type SpeechRequest,
  type TranscriptionReply,
  type TranscriptionRequest
} from "../plugins/ModelPlugin.ts"
import { upstreamFailed } from "./ChatErrors.ts"
import {
  type HeldCallError,
  heldCallServices,
  placeHoldFor,
  releaseReason,
  resolveModel,
  runHeldCall
} from "./HeldCall.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { traced } from "./Traced.ts"

export interface TranscriptionInput {
  /** The model id the client named. */
  readonly model: string
  readonly request: TranscriptionRequest
  readonly key: AuthenticatedKey
  readonly requestId: string
}

export interface SpeechInput {
  readonly model: string
  readonly request: SpeechRequest
  readonly key: AuthenticatedKey
  readonly requestId: string
}

/** The audio for the client: its content type and the bytes as they arrive (the first one already received). */
export interface SpeechResult {
  readonly contentType: string
  /** Fails when the upstream breaks off mid-stream: the server then cuts the response. */
  readonly body: Stream.Stream<Uint8Array, unknown>
}

export type AudioError = HeldCallError

export class AudioGateway extends Context.Service<
  AudioGateway,
  {
    readonly transcribe: (input: TranscriptionInput) => Effect.Effect<TranscriptionReply, AudioError>
    readonly speak: (input: SpeechInput) => Effect.Effect<SpeechResult, AudioError>
  }
>()("tollgate/app/AudioGateway") {
  static readonly layer = Layer.effect(
    AudioGateway,
    Effect.gen(function* () {
      const held = yield* heldCallServices
      const { registry, ledger, deployments } = held
      const tokens = yield* TokenCounter
      const media = yield* MediaProbe
      const speechModel = (modelId: string, key: AuthenticatedKey) =>
        resolveModel(registry, "speech", modelId, key, "POST /v1/audio/speech")

      const transcribe = Effect.fnUntraced(function* (input: TranscriptionInput) {
        const called = { kind: "transcription", called: "POST /v1/audio/transcriptions" } as const
        return yield* runHeldCall(held, input, called, ({ plugin, model }) =>
          Effect.gen(function* () {
            const { data, filename } = input.request.file
            const measuredMillis = yield* media.audioMillis(data, filename)
            const audioMillis = measuredMillis ?? media.audioUpperBoundMillis(data.length)
            const promptTokens = tokens.count(input.request.prompt ?? "")
            return {
              amount: plugin.pricing.estimate({ request: input.request, audioMillis, promptTokens }, model),
              call: (signal: AbortSignal, deployment: PluginModel) =>
                plugin.transcribe({
                  model: deployment,
                  request: input.request,
                  measuredMillis,
                  requestId: input.requestId,
                  signal
                }),
              bill: (reply: TranscriptionReply) => {
                const usage = { ...reply.usage, measuredMillis: audioMillis }
                return Effect.succeed({
                  cost: plugin.pricing.price(usage, model),
                  usage: { ...usage, measured: measuredMillis !== null, responseFormat: input.request.responseFormat }
                })
              }
            }
          })
        )
      }, traced("AudioGateway.transcribe"))

      /** Settles a speech call whose audio started to flow: the price of its input, whatever happened after. */
      const settleSpeech = (
        plugin: SpeechPlugin,
        model: PluginModel,
        input: SpeechInput,
        holdId: string,
        exit: Exit.Exit<unknown, unknown>
      ) => {
        const usage = { characters: [...input.request.input].length, inputTokens: tokens.count(input.request.input) }
        return ledger
          .settleDelivered(input.key.accountId, holdId, plugin.pricing.price(usage, model), {
            ...usage,
            responseFormat: input.request.responseFormat,
            completed: Exit.isSuccess(exit)
          })
          .pipe(Effect.uninterruptible)
      }

      const speak = Effect.fnUntraced(function* (input: SpeechInput) {
        const telemetry = yield* CurrentTelemetry
        const { plugin, model } = yield* speechModel(input.model, input.key)
        const estimate = plugin.pricing.estimate(
          { request: input.request, inputTokens: tokens.count(input.request.input) },
          model
        )
        const abort = new AbortController()
        // The first chunk is awaited here, so an upstream that fails before any audio is an error status, not a
        // truncated 200, and costs nothing.
        // The first audio byte is the first byte: until it comes, another deployment may still take the call.
        const started = deployments.route(model, { streamed: true }, (deployment) =>
          Effect.gen(function* () {
            const reply = yield* plugin.speak({
              model: deployment,
              request: input.request,
              requestId: input.requestId,
              signal: abort.signal
            })
            const iterator = reply.body[Symbol.asyncIterator]()
            const first = yield* Effect.tryPromise({
              // Edge: the plugin's body is a promise-based AsyncIterator.
              try: () => iterator.next(),
              catch: () => pluginFailure("unavailable", "the upstream audio stream failed before its first byte")
            })
            if (first.done === true)
              return yield* Effect.fail(pluginFailure("unavailable", "the upstream answered without audio"))
            return { reply, iterator, first: first.value }
          })
        )
        // Uninterruptible from the hold's commit until its release is attached (as in callUnderHold): a client that
        // leaves meanwhile still gets its committed hold released; only the upstream call can be interrupted.
        const { holdId, reply, iterator, first } = yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const { holdId } = yield* placeHoldFor(ledger, input, plugin.id, estimate)
            const opened = yield* restore(started).pipe(
              // Any failure or interruption here also stops the upstream call; the audio never reached the client.
              Effect.onExit((exit) =>
                Exit.isSuccess(exit)
                  ? Effect.void
                  : Effect.sync(() => abort.abort()).pipe(
                      Effect.andThen(ledger.release(input.key.accountId, holdId, releaseReason(exit))),
                      Effect.ignore
                    )
              ),
              Effect.mapError(upstreamFailed)
            )
            return { holdId, ...opened }
          })
        )
        const rest = Stream.fromAsyncIterable({ [Symbol.asyncIterator]: () => iterator }, (error) => error)
        const body = Stream.concat(Stream.succeed(first), rest).pipe(
          // A failure mid-stream cuts the response (the client sees an incomplete body, not a clean end); the bytes
          // already sent cannot be taken back, so the call is settled all the same.
          Stream.onExit((exit) =>
            Effect.sync(() => abort.abort()).pipe(
              Effect.andThen(settleSpeech(plugin, model, input, holdId, exit)),
              // The body runs after the handler returned: the charge is noted on the request's own record.
              Effect.provideService(CurrentTelemetry, telemetry)
            )
          )
        )
        return { contentType: reply.contentType, body } satisfies SpeechResult
      }, traced("AudioGateway.speak"))

      return AudioGateway.of({ transcribe, speak })
    })
  )
}
