/**
 * The chat pipeline: resolve the model to its plugin, check the key's allow-list, hold the plugin's estimate, invoke,
 * and settle from real usage — or release the whole hold when nothing was delivered. Streams are settled when they
 * end, however they end: completed, cut by the upstream, or abandoned by the client (then the upstream call is
 * aborted and the account pays for what was delivered, counted with the tokenizer when no usage arrived).
 */
import { Clock, Context, Effect, Exit, Layer, Result, Stream } from "effect"
import { randomUUID } from "node:crypto"
import type { ChatPlugin, Dialect, PluginModel, SseFrame } from "../plugins/ModelPlugin.ts"
import { PluginRegistry } from "./PluginRegistry.ts"
import { isRecord, parseJson, swapSoleModel } from "../plugins/text/convert/json.ts"
import { ChatDialects } from "./ports/ChatDialects.ts"
import { TokenCounter } from "./ports/TokenCounter.ts"
import { readyBatches } from "./ReadyBatches.ts"
import { makeStreamTransducer, type StreamTransducer } from "../plugins/text/convert/StreamTransducer.ts"
import { callUnderHold, resolveModel } from "./HeldCall.ts"
import {
  InvalidChatRequest,
  type ModelNotAllowed,
  type ModelNotFound,
  UpstreamFailed,
  upstreamFailed
} from "./ChatErrors.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { Ledger } from "./Ledger.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import type { StoreRefused, StoreUnavailable } from "./StoreErrors.ts"
import { billOf, frameText, progressOf } from "./ChatStreamAccounting.ts"
import { CurrentTelemetry } from "./RequestTelemetry.ts"
import { traced } from "./Traced.ts"
import { Deployments } from "./routing/Deployments.ts"
import type { ChatRequest } from "../plugins/text/convert/ChatIR.ts"
import { ResponseStore } from "./ports/ResponseStore.ts"
import { commitDelivered, makeStreamStorage, type ResponseNotStored, type TurnToStore } from "./DeliveredTurn.ts"
import { chatRouteHint } from "./routing/Affinity.ts"

export interface ChatInput {
  readonly dialect: Dialect
  readonly body: Readonly<Record<string, unknown>>
  /** Gemini carries the model and streaming in the URL, not the body. */
  readonly pathModel?: string
  readonly pathStream?: boolean
  readonly key: AuthenticatedKey
  readonly requestId: string
  /** The id the client is to see for its response (the Responses API's, under which the gateway stores it). */
  readonly responseId?: string
  /** The body already decoded to the IR by the caller (the Responses API, which builds the turn's history itself). */
  readonly request?: ChatRequest
  /**
   * The Responses API's turn to store: committed with the reply's bill before its final event leaves, or the reply is
   * not delivered as stored and nothing is billed (DeliveredTurn.ts).
   */
  readonly stored?: TurnToStore
}

export type ChatResult =
  | { readonly _tag: "Json"; readonly body: unknown }
  | { readonly _tag: "Stream"; readonly frames: Stream.Stream<Uint8Array> }

export type ChatError =
  | ModelNotFound
  | ModelNotAllowed
  | InvalidChatRequest
  | UpstreamFailed
  | LedgerRejected
  | StoreUnavailable
  | StoreRefused
  | ResponseNotStored

const encoder = new TextEncoder()

export class ChatGateway extends Context.Service<
  ChatGateway,
  { readonly chat: (input: ChatInput) => Effect.Effect<ChatResult, ChatError> }
>()("tollgate/app/ChatGateway") {
  static readonly layer = Layer.effect(
    ChatGateway,
    Effect.gen(function* () {
      const registry = yield* PluginRegistry
      const ledger = yield* Ledger
      const dialects = yield* ChatDialects
      const tokens = yield* TokenCounter
      const deployments = yield* Deployments
      const store = yield* ResponseStore

      const streamBill = (plugin: ChatPlugin, model: PluginModel, transducer: StreamTransducer, inputTokens: number) =>
        billOf(transducer, inputTokens, (usage) => plugin.pricing.price(usage, model), tokens.count)

      const settleStream = (
        plugin: ChatPlugin,
        model: PluginModel,
        accountId: string,
        holdId: string,
        transducer: StreamTransducer,
        inputTokens: number,
        exit: Exit.Exit<unknown, unknown>,
        notStored: boolean
      ) =>
        Effect.gen(function* () {
          const bill = streamBill(plugin, model, transducer, inputTokens)
          if (bill === undefined || notStored) {
            // Nothing reached the client, or nothing it can retrieve of a response meant to be stored: no charge.
            return yield* ledger.release(accountId, holdId, Exit.isSuccess(exit) && !notStored ? "unused" : "failed")
          }
          // Delivered: billed now, or retried until the database takes it.
          yield* ledger.settleDelivered(accountId, holdId, bill.cost, bill.usage)
        }).pipe(
          Effect.catch((error) => Effect.logError("stream release failed", error)),
          Effect.uninterruptible
        )

      const chat = Effect.fnUntraced(function* (input: ChatInput) {
        const telemetry = yield* CurrentTelemetry
        const modelId = input.pathModel ?? (typeof input.body.model === "string" ? input.body.model : undefined)
        if (modelId === undefined) {
          return yield* new InvalidChatRequest({ param: "model", message: "model is required" })
        }
        const client = dialects[input.dialect]
        // A model served on another endpoint is refused before any hold: it costs nothing and says where to go.
        const { plugin, model } = yield* resolveModel(
          registry,
          "chat",
          modelId,
          input.key,
          client.called(modelId, input.pathStream === true)
        )
        const converted =
          input.request === undefined
            ? client.decode(input.body, { model: modelId, stream: input.pathStream ?? false })
            : Result.succeed(input.request)
        if (Result.isFailure(converted)) {
          return yield* new InvalidChatRequest({
            param: converted.failure.param === "" ? null : converted.failure.param,
            message: converted.failure.message
          })
        }
        const request = converted.success
        const refusal = plugin.check?.({ dialect: input.dialect, body: input.body }, request, model)
        if (refusal !== undefined) return yield* upstreamFailed(refusal)
        // A flat-priced plugin says how to count (or not count) its input: tokenizing a multi-MB image is wasted work.
        let inputTokens = plugin.countInput?.({ dialect: input.dialect, body: input.body })
        if (inputTokens === undefined) {
          // A big prompt is counted in slices, so the event loop answers other requests meanwhile.
          inputTokens = yield* client.countInput(input.body)
        }
        const estimate = plugin.pricing.estimate({ request, inputTokens }, model)
        const holdInput = {
          accountId: input.key.accountId,
          amount: estimate,
          keyId: input.key.keyId,
          keySpendLimit: input.key.spendLimit,
          model: modelId,
          plugin: plugin.id,
          requestId: input.requestId
        }
        const abort = new AbortController()
        const clientCall = { dialect: input.dialect, body: input.body }
        const hint = chatRouteHint(input.key.keyId, request, clientCall, inputTokens, model)
        const { hold, reply } = yield* callUnderHold(
          ledger,
          holdInput,
          (signal) =>
            deployments.route(model, hint, (deployment) =>
              plugin.invoke({ model: deployment, request, client: clientCall, requestId: input.requestId, signal })
            ),
          abort
        )
        const holdId = hold.holdId
        const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const fallbackId = `msg_${randomUUID().replaceAll("-", "")}`

        const replyContext = { body: input.body, responseId: input.responseId, model: modelId, created }

        if (reply._tag === "Body") {
          const ir = dialects[reply.dialect].readReply(reply.body, { id: fallbackId, model: modelId })
          if (Result.isFailure(ir)) {
            yield* hold.abandon("failed")
            return yield* new UpstreamFailed({
              reason: "unavailable",
              message: "the upstream sent a response the gateway cannot read"
            })
          }
          const usage = ir.success.usage
          const cost = plugin.pricing.price(usage, model)
          const native = reply.dialect === input.dialect && isRecord(reply.body)
          const body: unknown = native
            ? client.present === undefined
              ? { ...(reply.body as Record<string, unknown>), model: modelId }
              : reply.body
            : client.encodeReply({ ...ir.success, model: modelId }, created, {
                body: input.body,
                responseId: input.responseId
              })
          const presented = isRecord(body) ? client.present?.(body, replyContext) : undefined
          if (input.stored !== undefined && presented?.final !== undefined) {
            // Stored before it is delivered, with its bill; not stored, not delivered and not billed.
            yield* hold.committed
            yield* commitDelivered(store, input.stored, presented.final, {
              holdId,
              accountId: input.key.accountId,
              cost,
              usage
            }).pipe(Effect.tapError(() => hold.abandon("failed")))
          }
          // The upstream was paid and the answer is here: the client gets it even if the bill has to be retried.
          yield* hold.settleDelivered(cost, usage)
          return { _tag: "Json", body: presented === undefined ? body : presented.shown } satisfies ChatResult
        }

        // Nothing of a stream reaches the client before its hold is committed.
        yield* hold.committed.pipe(Effect.tapError(() => Effect.sync(() => abort.abort())))
        const includeUsage =
          input.dialect === "openai" &&
          isRecord(input.body.stream_options) &&
          (input.body.stream_options as Record<string, unknown>).include_usage === true
        const transducer = makeStreamTransducer({
          upstream: reply.dialect,
          client: input.dialect,
          created,
          fallbackId,
          fallbackModel: modelId,
          clientModel: modelId,
          includeUsage,
          inputTokens,
          clientBody: input.body,
          ...(input.responseId === undefined ? {} : { clientId: input.responseId })
        })
        // A long stream records what it delivered with its hold's lease: a crash then bills that, not nothing. Not a
        // stored one: it is billed only once stored (its bill is committed with it), so a crash before costs nothing.
        if (input.stored === undefined) {
          ledger.reportProgress(
            holdId,
            progressOf(transducer, inputTokens, (usage) => plugin.pricing.price(usage, model), tokens.count)
          )
        }
        const passthrough = reply.dialect === input.dialect
        let settled = false
        /** The whole response as the upstream's own terminal event gave it (same dialect). */
        let nativeFinal: Readonly<Record<string, unknown>> | undefined
        const storage =
          input.stored === undefined
            ? undefined
            : makeStreamStorage(store, input.stored, transducer, {
                holdId,
                accountId: input.key.accountId,
                // The upstream's own terminal object when it sent one; else the transducer's.
                final: () => (passthrough ? nativeFinal : undefined) ?? transducer.snapshot().final,
                bill: () => streamBill(plugin, model, transducer, inputTokens)
              })
        // The stream runs after the handler returned: its settlement notes the charge on the request's own record.
        const settle = (exit: Exit.Exit<unknown, unknown>) =>
          Effect.suspend(() =>
            settleStream(
              plugin,
              model,
              input.key.accountId,
              holdId,
              transducer,
              inputTokens,
              exit,
              storage?.refused() === true
            )
          ).pipe(Effect.provideService(CurrentTelemetry, telemetry))
        const framesOf = (frame: SseFrame): ReadonlyArray<string> => {
          const data = frame.data === "[DONE]" ? "[DONE]" : parseJson(frame.data)
          const converted = transducer.push({ ...(frame.event === undefined ? {} : { event: frame.event }), data })
          if (!passthrough) return converted
          // Same dialect: forward the upstream's own bytes (unknown fields preserved); the transducer only counts.
          const presented = isRecord(data) ? client.present?.(data, replyContext) : undefined
          if (presented !== undefined) {
            if (presented.final !== undefined) nativeFinal = presented.final
            return [frameText({ event: frame.event, data: JSON.stringify(presented.shown) })]
          }
          if (
            input.dialect === "openai" &&
            !includeUsage &&
            isRecord(data) &&
            Array.isArray(data.choices) &&
            data.choices.length === 0
          ) {
            return [] // the usage chunk the gateway asked for on the client's behalf
          }
          // The client's model name replaces the upstream's: in the text itself when that is unambiguous (no
          // re-serialization per chunk), else on the parsed value.
          if (isRecord(data) && typeof data.model === "string") {
            const swapped =
              swapSoleModel(frame.data, data.model, modelId) ?? JSON.stringify({ ...data, model: modelId })
            return [frameText({ event: frame.event, data: swapped })]
          }
          if (isRecord(data) && isRecord(data.message) && typeof data.message.model === "string") {
            const swapped =
              swapSoleModel(frame.data, data.message.model, modelId) ??
              JSON.stringify({ ...data, message: { ...data.message, model: modelId } })
            return [frameText({ event: frame.event, data: swapped })]
          }
          return [frameText(frame)]
        }
        // Frames that arrived together (one network read) are converted together and written in one piece.
        const textOf = (batch: ReadonlyArray<SseFrame>): string => {
          let text = ""
          for (const frame of batch) for (const converted of framesOf(frame)) text += converted
          return text
        }
        const frames = Stream.fromAsyncIterable(readyBatches(reply.events), (error) => error).pipe(
          Stream.map(textOf),
          Stream.concat(
            Stream.suspend(() => {
              const tail = transducer.end() // also marks the snapshot finished for accounting
              return passthrough || tail.length === 0 ? Stream.empty : Stream.succeed(tail.join(""))
            })
          ),
          Stream.catchCause(() =>
            Stream.suspend(() =>
              Stream.succeed(transducer.fail("api_error", "the upstream stream failed before it finished").join(""))
            )
          ),
          (stream) => (storage === undefined ? stream : Stream.mapEffect(stream, storage.storeFinal)),
          // A stream that ended whole is billed here, before its response ends, so that what it cost can follow its
          // last frame (src/http says it in trailers); one that did not is billed at its exit, for what was delivered.
          Stream.concat(
            Stream.suspend(() => {
              const end = transducer.snapshot()
              if (!end.finished || end.truncated || end.usage === undefined) return Stream.empty
              settled = true
              return Stream.fromEffect(Effect.as(settle(Exit.void), ""))
            })
          ),
          Stream.filter((text) => text.length > 0),
          Stream.map((text) => encoder.encode(text)),
          Stream.onExit((exit) =>
            // A stream that completed has read the upstream body to its end: there is nothing left to abort (and an
            // abort would build a DOMException with a stack trace for nothing).
            Effect.sync(() => Exit.isSuccess(exit) || abort.abort()).pipe(
              Effect.andThen(settled ? Effect.void : Effect.andThen(storage?.storeLeft ?? Effect.void, settle(exit)))
            )
          )
        )
        return { _tag: "Stream", frames } satisfies ChatResult
      }, traced("ChatGateway.chat"))

      return ChatGateway.of({ chat })
    })
  )
}
