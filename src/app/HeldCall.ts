/**
 * The steps every non-chat gateway (images, embeddings, audio) takes around one plugin call: resolve the model for
 * its endpoint and the key, place the hold, run the call under it — an interruption aborts the upstream request, a
 * failure or interruption releases the whole hold, a plugin failure becomes `UpstreamFailed` — and leave settlement
 * to the caller, which knows the usage.
 */
import { Effect, Exit } from "effect"
import type { PluginFailure, PluginModel } from "../plugins/ModelPlugin.ts"
import type { Deployments, RouteHint } from "./routing/Deployments.ts"
import { type PluginRegistry, type ResolvedModel, wrongEndpointMessage } from "./PluginRegistry.ts"
import type { UpstreamFailed } from "./ChatErrors.ts"
import { InvalidChatRequest, ModelNotAllowed, ModelNotFound, upstreamFailed } from "./ChatErrors.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import type { Ledger } from "./Ledger.ts"
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

/** The hold of `amount` for one call of `input` through `pluginId`. */
export const placeHoldFor = (ledger: Ledger["Service"], input: HeldCallInput, pluginId: string, amount: Micros) =>
  ledger.placeHold({
    accountId: input.key.accountId,
    amount,
    keyId: input.key.keyId,
    keySpendLimit: input.key.spendLimit,
    model: input.model,
    plugin: pluginId,
    requestId: input.requestId
  })

/**
 * Runs `call` under the hold `holdId`: its signal aborts the upstream request when the caller is interrupted, and any
 * failure or interruption releases the whole hold (a release that fails is left to the expiry sweep).
 */
export const underHold = <A, R>(
  ledger: Ledger["Service"],
  accountId: string,
  holdId: string,
  call: (signal: AbortSignal) => Effect.Effect<A, PluginFailure, R>
): Effect.Effect<A, PluginFailure, R> =>
  Effect.suspend(() => {
    const abort = new AbortController()
    return call(abort.signal).pipe(
      Effect.onInterrupt(() => Effect.sync(() => abort.abort())),
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) ? Effect.void : ledger.release(accountId, holdId, releaseReason(exit)).pipe(Effect.ignore)
      )
    )
  })

/**
 * Places the hold of `amount` for `input` and runs `call` under it (see `underHold`), a plugin failure surfacing as
 * `UpstreamFailed`; the hold is left for the caller to settle from the reply. Uninterruptible from the hold's commit
 * until its release is attached, so a caller interrupted meanwhile (the client left) still releases a committed hold;
 * only the call itself can be interrupted.
 */
export const callUnderHold = <A, R>(
  ledger: Ledger["Service"],
  input: HeldCallInput,
  pluginId: string,
  amount: Micros,
  call: (signal: AbortSignal) => Effect.Effect<A, PluginFailure, R>
) =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const { holdId } = yield* placeHoldFor(ledger, input, pluginId, amount)
      const reply = yield* underHold(ledger, input.key.accountId, holdId, (signal) => restore(call(signal))).pipe(
        Effect.mapError(upstreamFailed)
      )
      return { holdId, reply }
    })
  )

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
  services: {
    readonly registry: PluginRegistry["Service"]
    readonly ledger: Ledger["Service"]
    readonly deployments: Deployments["Service"]
  },
  input: HeldCallInput,
  endpoint: { readonly kind: K; readonly called: string },
  plan: (entry: Extract<ResolvedModel, { readonly kind: K }>) => Effect.Effect<HeldPlan<A, R>, E>
) =>
  Effect.gen(function* () {
    const entry = yield* resolveModel(services.registry, endpoint.kind, input.model, input.key, endpoint.called)
    const { amount, call, bill, hint } = yield* plan(entry)
    const { holdId, reply } = yield* callUnderHold(services.ledger, input, entry.plugin.id, amount, (signal) =>
      services.deployments.route(entry.model, hint ?? {}, (deployment) => call(signal, deployment))
    )
    const billed = yield* bill(reply).pipe(
      Effect.tapError(() => services.ledger.release(input.key.accountId, holdId, "failed").pipe(Effect.ignore))
    )
    // The upstream was paid and the answer is here: the client gets it even if the bill has to be retried.
    yield* services.ledger.settleDelivered(input.key.accountId, holdId, billed.cost, billed.usage)
    return reply
  })
