/**
 * The chat pipeline's last step for a streamed reply: relay the upstream's events in the client's protocol, store the
 * finished response when the Responses API asked, and settle once, however the stream ends — completed (billed before
 * its last byte, so what it cost can follow in trailers), cut by the upstream, or abandoned by the client (then the
 * upstream call is aborted and the account pays for what was delivered, counted with the tokenizer when no usage
 * arrived). Per-frame work is plain code (FrameRelay.ts), read and written as one pull (RelayedStream.ts); this file
 * only orders the steps.
 */
import { Effect, Exit, Stream } from "effect"
import type { ChatInput, ChatResult } from "./ChatGateway.ts"
import type { ChatPlan } from "./ChatPlan.ts"
import { billOf, progressOf } from "./ChatStreamAccounting.ts"
import { makeStreamStorage } from "./DeliveredTurn.ts"
import { FrameRelay } from "./FrameRelay.ts"
import type { CallHold } from "./HeldCall.ts"
import type { Ledger } from "./Ledger.ts"
import type { ResponseStore } from "./ports/ResponseStore.ts"
import type { TokenCounter } from "./ports/TokenCounter.ts"
import { readyBatches } from "./ReadyBatches.ts"
import { relayedStream } from "./RelayedStream.ts"
import type { SseFrame } from "../plugins/ModelPlugin.ts"
import type { Usage } from "../plugins/text/convert/ChatIR.ts"
import type { StreamTransducer } from "../plugins/text/convert/StreamTransducer.ts"
import { CurrentTelemetry, type RequestTelemetry } from "./RequestTelemetry.ts"

export interface StreamServices {
  readonly ledger: Ledger["Service"]
  readonly store: ResponseStore["Service"]
  readonly tokens: TokenCounter["Service"]
}

export const deliverStream = (
  services: StreamServices,
  plan: ChatPlan,
  input: ChatInput,
  hold: CallHold,
  reply: { readonly dialect: ChatInput["dialect"]; readonly events: AsyncIterable<SseFrame> },
  abort: AbortController,
  created: number
) =>
  Effect.gen(function* () {
    // Nothing of a stream reaches the client before its hold is committed.
    yield* hold.committed.pipe(Effect.tapError(() => Effect.sync(() => abort.abort())))
    const relay = new FrameRelay(plan, input, reply.dialect, created)
    const { transducer } = relay
    const price = (usage: Usage) => plan.plugin.pricing.price(usage, plan.model)
    const bill = () => billOf(transducer, plan.inputTokens, price, services.tokens.count)
    // A long stream records what it delivered with its hold's lease: a crash then bills that, not nothing. Not a
    // stored one: it is billed only once stored (its bill is committed with it), so a crash before costs nothing.
    if (input.stored === undefined) {
      services.ledger.reportProgress(
        hold.holdId,
        progressOf(transducer, plan.inputTokens, price, services.tokens.count)
      )
    }
    const storage =
      input.stored === undefined
        ? undefined
        : makeStreamStorage(services.store, input.stored, transducer, {
            holdId: hold.holdId,
            accountId: input.key.accountId,
            final: relay.final,
            bill
          })
    // The stream runs after the handler returned: its settlement notes the charge on the request's own record.
    const telemetry = yield* CurrentTelemetry
    const settlement = new StreamSettlement(services.ledger, telemetry, input.key.accountId, hold.holdId, transducer, {
      bill,
      notStored: () => storage?.refused() === true
    })
    const frames = relayedStream(readyBatches(reply.events), relay, storage?.storeFinal).pipe(
      Stream.onExit((exit) =>
        // A stream that completed read the upstream to its end or tore it down (RelayedStream.ts): there is nothing
        // left to abort (and an abort would build a DOMException with a stack trace for nothing). It is billed here,
        // before the response ends (the server ends it once the stream's finalizers ran).
        Effect.andThen(
          Exit.isSuccess(exit) ? settlement.whole : Effect.sync(() => abort.abort()),
          settlement.atExit(exit, storage?.storeLeft ?? Effect.void)
        )
      )
    )
    return { _tag: "Stream", frames } satisfies ChatResult
  })

/**
 * A stream's one settlement. A stream that ended whole (the upstream's usage arrived) is billed before its last byte;
 * any other is billed at its exit for what was delivered, or released when nothing was (or when its stored response
 * could not be kept). The stream runs after the handler returned, so its settlement is uninterruptible and logged.
 */
class StreamSettlement {
  private settled = false
  constructor(
    private readonly ledger: Ledger["Service"],
    private readonly telemetry: RequestTelemetry,
    private readonly accountId: string,
    private readonly holdId: string,
    private readonly transducer: StreamTransducer,
    private readonly reading: {
      /** What the stream is billed if it ends now (undefined: nothing was delivered). */
      readonly bill: () => ReturnType<typeof billOf>
      /** The stream's stored response could not be kept: nothing may be charged for it. */
      readonly notStored: () => boolean
    }
  ) {}

  readonly whole: Effect.Effect<void> = Effect.suspend(() => {
    const end = this.transducer.snapshot()
    if (!end.finished || end.truncated || end.usage === undefined) return Effect.void
    this.settled = true
    return this.settle(Exit.void)
  })

  readonly atExit = (exit: Exit.Exit<unknown, unknown>, beforeSettling: Effect.Effect<void>): Effect.Effect<void> =>
    Effect.suspend(() => (this.settled ? Effect.void : Effect.andThen(beforeSettling, this.settle(exit))))

  private settle(exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> {
    return Effect.suspend(() => {
      const bill = this.reading.bill()
      const notStored = this.reading.notStored()
      if (bill === undefined || notStored) {
        // Nothing reached the client, or nothing it can retrieve of a response meant to be stored: no charge.
        const reason = Exit.isSuccess(exit) && !notStored ? "unused" : "failed"
        return this.ledger.release(this.accountId, this.holdId, reason)
      }
      // Delivered: billed now, or retried until the database takes it.
      return this.ledger.settleDelivered(this.accountId, this.holdId, bill.cost, bill.usage)
    }).pipe(
      Effect.catch((error) => Effect.logError("stream release failed", error)),
      Effect.provideService(CurrentTelemetry, this.telemetry),
      Effect.uninterruptible
    )
  }
}
