/**
 * The steps every non-chat gateway (images, embeddings, audio) takes around one plugin call: resolve the model for
 * its endpoint and the key, place the hold, run the call under it — an interruption aborts the upstream request, a
 * failure or interruption releases the whole hold — and leave settlement to the caller, which knows the usage.
 */
import { Effect, Exit } from "effect"
import type { PluginFailure } from "../plugins/ModelPlugin.ts"
import type { PluginRegistry, ResolvedModel } from "../plugins/PluginRegistry.ts"
import { InvalidChatRequest, ModelNotAllowed, ModelNotFound } from "./ChatErrors.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import type { Ledger } from "./Ledger.ts"
import type { Micros } from "../domain/Money.ts"

/** Why a failed plugin call's hold goes back: the client went away, the upstream refused the request, or it failed. */
export const releaseReason = (exit: Exit.Exit<unknown, PluginFailure>) => {
  if (Exit.hasInterrupts(exit)) return "cancelled" as const
  const failure = Exit.findErrorOption(exit)
  if (
    failure._tag === "Some" &&
    failure.value.status >= 400 &&
    failure.value.status < 500 &&
    failure.value.status !== 429
  ) {
    return "rejected" as const
  }
  return "failed" as const
}

/** A catalog model for an endpoint of `kind`: unknown → 404, outside the key's list → 403, another kind → 400. */
export const resolveModel = <K extends ResolvedModel["kind"]>(
  registry: PluginRegistry["Service"],
  kind: K,
  modelId: string,
  key: AuthenticatedKey,
  wrongEndpoint: (modelId: string, kind: ResolvedModel["kind"]) => string
) =>
  Effect.gen(function* () {
    const entry = registry.resolve(modelId)
    if (entry === undefined) return yield* new ModelNotFound({ model: modelId })
    if (key.models !== null && !key.models.includes(modelId)) return yield* new ModelNotAllowed({ model: modelId })
    if (entry.kind !== kind) {
      return yield* new InvalidChatRequest({ param: "model", message: wrongEndpoint(modelId, entry.kind) })
    }
    return entry as Extract<ResolvedModel, { readonly kind: K }>
  })

/** The hold for one call of `key` on `modelId` through `pluginId`. */
export const placeHoldFor = (
  ledger: Ledger["Service"],
  call: {
    readonly key: AuthenticatedKey
    readonly modelId: string
    readonly pluginId: string
    readonly requestId: string | null
    readonly amount: Micros
  }
) =>
  ledger.placeHold({
    accountId: call.key.accountId,
    amount: call.amount,
    keyId: call.key.keyId,
    keySpendLimit: call.key.spendLimit,
    model: call.modelId,
    plugin: call.pluginId,
    requestId: call.requestId
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
