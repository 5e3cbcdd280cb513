/**
 * The steps every non-chat gateway (images, embeddings, audio) takes around one plugin call: resolve the model for
 * its endpoint and the key, place the hold, run the call under it — an interruption aborts the upstream request, a
 * failure or interruption releases the whole hold, a plugin failure becomes `UpstreamFailed` — and leave settlement
 * to the caller, which knows the usage.
 */
import { Clock, Effect, Exit } from "effect"
import type { RefundReason } from "../domain/ledger/LedgerEvent.ts"
import type { PluginFailure, PluginModel } from "../plugins/ModelPlugin.ts"
import { Deployments, type RouteHint } from "./routing/Deployments.ts"
import { PluginRegistry, type ResolvedModel, wrongEndpointMessage } from "./PluginRegistry.ts"
import type { UpstreamFailed } from "./ChatErrors.ts"
import { InvalidChatRequest, ModelNotAllowed, ModelNotFound, upstreamFailed } from "./ChatErrors.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { Ledger, type PlaceHoldInput } from "./Ledger.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import type { StoreRefused, StoreUnavailable } from "./StoreErrors.ts"
import type { Micros } from "../domain/Money.ts"

/** Why `resolveModel` refuses a call before any hold: an unknown model, one off the key's list, or another kind. */
export type ModelRefused = ModelNotFound | ModelNotAllowed | InvalidChatRequest

/** What a held call can fail with: the model refused, the upstream failed, or the ledger refused or was unreachable. */
export type HeldCallError = ModelRefused | UpstreamFailed | LedgerRejected | StoreUnavailable | StoreRefused

/** Why a failed plugin call's hold goes back: the client went away, the upstream refused the request, or it failed. */
export const releaseReason = (exit: Exit.Exit<unknown, PluginFailure>) => {
  if (Exit.hasInterrupts(exit)) return "cancelled" as const
  const failure = Exit.findErrorOption(exit)
  if (failure._tag === "Some" && failure.value.reason === "invalid_request") return "rejected" as const
  return "failed" as const
}

/**
 * A catalog model for an endpoint of `kind` (or of any of several kinds, as Gemini's `countTokens` takes chat and
 * embeddings models): unknown → 404, outside the key's list → 403, another kind → 400 naming the endpoint that was
 * `called` (`POST /v1/embeddings`) and the one that serves the model.
 */
export const resolveModel = <K extends ResolvedModel["kind"]>(
  registry: PluginRegistry["Service"],
  kind: K | ReadonlyArray<K>,
  modelId: string,
  key: AuthenticatedKey,
  called: string
) =>
  Effect.gen(function* () {
    const entry = registry.resolve(modelId)
    if (entry === undefined) return yield* new ModelNotFound({ model: modelId })
    if (key.models !== null && !key.models.includes(modelId)) return yield* new ModelNotAllowed({ model: modelId })
    if (typeof kind === "string" ? entry.kind !== kind : !(kind as ReadonlyArray<string>).includes(entry.kind)) {
      return yield* new InvalidChatRequest({ param: "model", message: wrongEndpointMessage(modelId, entry, called) })
    }
    return entry as Extract<ResolvedModel, { readonly kind: K }>
  })

/** The call as the client made it: whose key, on which model id, under which request id. */
export interface HeldCallInput {
  readonly key: AuthenticatedKey
  /** The model id the client named. */
  readonly model: string
  readonly requestId: string
}

/** What is held for one call of `input` through `pluginId`: `amount`, on the key's account, named by its request. */
export const holdInputFor = (input: HeldCallInput, pluginId: string, amount: Micros): PlaceHoldInput => ({
  accountId: input.key.accountId,
  amount,
  keyId: input.key.keyId,
  keySpendLimit: input.key.spendLimit,
  model: input.model,
  plugin: pluginId,
  requestId: input.requestId
})

/** Asks the ledger for that hold (`holdInputFor`). */
export const placeHoldFor = (ledger: Ledger["Service"], input: HeldCallInput, pluginId: string, amount: Micros) =>
  ledger.placeHold(holdInputFor(input, pluginId, amount))

/** The hold a call ran under, through which its reply is billed or the hold given back. */
export interface CallHold {
  readonly holdId: string
  /** Awaited before a stream's first byte: fails when the hold was not committed (nothing may be delivered). */
  readonly committed: Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused>
  /** Bills a reply about to be delivered; fails only when its hold was not committed (then it must not be). */
  readonly settleDelivered: (
    cost: Micros,
    usage: unknown
  ) => Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused>
  /** The reply will not be delivered: the whole hold goes back (a release that fails is left to the sweep). */
  readonly abandon: (reason: RefundReason) => Effect.Effect<void>
}

const committedHold = (ledger: Ledger["Service"], accountId: string, holdId: string): CallHold => ({
  holdId,
  committed: Effect.void,
  settleDelivered: (cost, usage) => ledger.settleDelivered(accountId, holdId, cost, usage),
  abandon: (reason) => ledger.release(accountId, holdId, reason).pipe(Effect.ignore)
})

/**
 * Runs `call` under a hold of `hold`: its signal (`abort`'s) aborts the upstream request when the caller is
 * interrupted, any failure or interruption gives the whole hold back, a plugin failure becomes `UpstreamFailed`.
 * Uninterruptible from the hold's placing until its release is attached, so a caller interrupted meanwhile (the
 * client left) still gives back a committed hold; only the call itself can be interrupted.
 *
 * When this instance's last commit of the account shows room for twice the hold (`Ledger.likelyAccepted`), the call
 * starts at once and the hold lingers (LingeringHold.ts), so that a short call's hold and settlement share a commit;
 * a hold refused after all (another instance spent the balance meanwhile) is found before anything is delivered.
 * Otherwise the hold commits first, so an account without funds never costs an upstream call.
 */
export const callUnderHold = <A, R>(
  ledger: Ledger["Service"],
  hold: PlaceHoldInput,
  call: (signal: AbortSignal) => Effect.Effect<A, PluginFailure, R>,
  abort: AbortController = new AbortController(),
  /** A streamed reply's hold commits before its first byte anyway: it need not wait for its settlement. */
  streamed = false
): Effect.Effect<
  { readonly hold: CallHold; readonly reply: A },
  UpstreamFailed | LedgerRejected | StoreUnavailable | StoreRefused,
  R
> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const calling = restore(call(abort.signal)).pipe(Effect.onInterrupt(() => Effect.sync(() => abort.abort())))
      if (!ledger.likelyAccepted(hold, yield* Clock.currentTimeMillis)) {
        const { holdId } = yield* ledger.placeHold(hold)
        const held = committedHold(ledger, hold.accountId, holdId)
        const reply = yield* calling.pipe(
          Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : held.abandon(releaseReason(exit)))),
          Effect.mapError(upstreamFailed)
        )
        return { hold: held, reply }
      }
      // Placing a lingering hold only queues it (it never waits), so the call runs on this fiber right after: a
      // refusal, decided while the call runs, aborts it through the signal.
      let refused = false
      const pending = yield* ledger.placeHoldLingering(
        hold,
        () => {
          refused = true
          abort.abort()
        },
        streamed ? "next-batch" : "follower"
      )
      const reply = yield* calling.pipe(
        Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : pending.abandon(releaseReason(exit)))),
        Effect.mapError(upstreamFailed),
        // A call stopped because its hold was refused fails with the refusal.
        Effect.catchIf(
          () => refused,
          (error) => Effect.andThen(pending.committed, Effect.fail(error))
        )
      )
      return { hold: pending, reply }
    })
  )

/** The services every gateway's held calls run on. */
export interface HeldCallServices {
  readonly registry: PluginRegistry["Service"]
  readonly ledger: Ledger["Service"]
  readonly deployments: Deployments["Service"]
}

/** A gateway's opening: the held-call services, taken once when its layer is built. */
export const heldCallServices: Effect.Effect<HeldCallServices, never, PluginRegistry | Ledger | Deployments> =
  Effect.gen(function* () {
    return { registry: yield* PluginRegistry, ledger: yield* Ledger, deployments: yield* Deployments }
  })

/** What a kind's gateway plans for one call once its model is resolved: the hold, the call, and what it cost. */
export interface HeldPlan<A, R> {
  /** The most the call can cost: held before it is made. */
  readonly amount: Micros
  /** One attempt on `deployment`, the model narrowed to the deployment routing chose (see `Deployments.route`). */
  readonly call: (signal: AbortSignal, deployment: PluginModel) => Effect.Effect<A, PluginFailure, R>
  /** How the call is routed among the model's deployments (absent: by weight, no affinity). */
  readonly hint?: RouteHint | undefined
  /**
   * The price of the reply and the usage recorded with it. A failure means the reply cannot be delivered (it does
   * not match the request): the whole hold is released and nothing is charged.
   */
  readonly bill: (reply: A) => Effect.Effect<{ readonly cost: Micros; readonly usage: unknown }, UpstreamFailed>
}

/**
 * The held-call pipeline of the request/response kinds: resolve the model for the endpoint's kind and the key's list,
 * let the kind plan the call (count, validate, estimate), hold, call under the hold, and settle the reply's price —
 * or release the whole hold when the call failed, was cancelled, or its reply cannot be delivered. Streams (chat,
 * speech) and tasks (video) resolve and hold through the same functions but settle when their delivery ends.
 */
export const runHeldCall = <K extends ResolvedModel["kind"], A, E, R>(
  services: HeldCallServices,
  input: HeldCallInput,
  endpoint: { readonly kind: K; readonly called: string },
  plan: (entry: Extract<ResolvedModel, { readonly kind: K }>) => Effect.Effect<HeldPlan<A, R>, E>
) =>
  Effect.gen(function* () {
    const entry = yield* resolveModel(services.registry, endpoint.kind, input.model, input.key, endpoint.called)
    const { amount, call, bill, hint } = yield* plan(entry)
    const { hold, reply } = yield* callUnderHold(
      services.ledger,
      holdInputFor(input, entry.plugin.id, amount),
      (signal) => services.deployments.route(entry.model, hint ?? {}, (deployment) => call(signal, deployment))
    )
    const billed = yield* bill(reply).pipe(Effect.tapError(() => hold.abandon("failed")))
    // The upstream was paid and the answer is here: the client gets it even if the bill has to be retried.
    yield* hold.settleDelivered(billed.cost, billed.usage)
    return reply
  })
