/**
 * One batch line through the chat pipeline of an interactive call: planned as `POST /v1/chat/completions` would plan
 * it (ChatPlan.ts: model, key's list, conversion to the IR, the plugin's refusal, token count), held at batch prices
 * under the line's own hold, called through the deployments' routing on any vendor, and presented and priced by
 * the same step as a whole interactive reply (ChatJsonReply.ts). The line's result then commits with the ledger
 * command that bills or refunds its hold (`commit`): neither can be written without the other.
 */
import { Clock, Effect, Exit } from "effect"
import type { BatchState, LineResult } from "../../domain/batch/BatchJob.ts"
import type { InputLine } from "../../domain/batch/BatchInput.ts"
import { formatMicros, type Micros } from "../../domain/Money.ts"
import type { RefundReason } from "../../domain/ledger/LedgerEvent.ts"
import type { PluginFailure } from "../../plugins/ModelPlugin.ts"
import { deliverJson } from "../ChatJsonReply.ts"
import type { ChatInput } from "../ChatGateway.ts"
import { planChat } from "../ChatPlan.ts"
import type { CallHold, HeldCallServices } from "../HeldCall.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { PlaceHoldInput } from "../Ledger.ts"
import type { LedgerRejected } from "../LedgerErrors.ts"
import type { ChatDialects } from "../ports/ChatDialects.ts"
import type { ResponseStore } from "../ports/ResponseStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import { lineHoldId, lineRequestId, lineStatus } from "./BatchOutput.ts"
import { batchPriced } from "./BatchPricing.ts"

export interface LineServices extends HeldCallServices {
  readonly dialects: ChatDialects["Service"]
  readonly responses: ResponseStore["Service"]
}

/** What a line's result commits with: a settlement or a release of its hold, or nothing (no hold was placed). */
export type LineMoney =
  | { readonly _tag: "Settle"; readonly holdId: string; readonly cost: Micros; readonly usage: unknown }
  | { readonly _tag: "Release"; readonly holdId: string; readonly reason: RefundReason }
  | { readonly _tag: "None" }

/** Fails only when the store is unreachable: the line then runs again in a later round. */
export type Commit = (result: LineResult, money: LineMoney) => Effect.Effect<void, StoreUnavailable>

/** A line's two commits: its start with its hold's placing, its result with the hold's resolution. */
export interface LineCommits {
  readonly start: (
    line: number,
    hold: PlaceHoldInput & { readonly holdId: string }
  ) => Effect.Effect<"started" | "taken" | LedgerRejected, StoreUnavailable>
  readonly finish: Commit
}

const failed = (
  base: Pick<LineResult, "line" | "customId" | "requestId">,
  holdId: string | null,
  statusCode: number,
  error: { readonly code: string; readonly message: string }
): LineResult => ({
  ...base,
  outcome: "failed",
  holdId,
  cost: formatMicros(0n),
  response: {
    statusCode,
    body: { error: { ...error, type: statusCode >= 500 ? "server_error" : "invalid_request_error", param: null } }
  },
  error
})

/** A failure before anything was held: the status and code of the refusal, in OpenAI's words. */
const refusal = (error: { readonly _tag: string; readonly message?: string }) => {
  switch (error._tag) {
    case "ModelNotFound":
      return { status: 404, code: "model_not_found", message: "the model named by the line does not exist" }
    case "ModelNotAllowed":
      return { status: 403, code: "model_not_allowed", message: "the batch's key may not use this model" }
    case "LedgerRejected":
      return { status: 402, code: "insufficient_quota", message: error.message ?? "the hold was refused" }
    default:
      return { status: 400, code: "invalid_request", message: error.message ?? "the request was refused" }
  }
}

/** A hold that only remembers what deliverJson asks of it; `commit` then writes it with the line's result. */
const deferredHold = (holdId: string) => {
  const seen: { settled?: { cost: Micros; usage: unknown }; abandoned?: RefundReason } = {}
  const hold: CallHold = {
    holdId,
    committed: Effect.void,
    settleDelivered: (cost, usage) =>
      Effect.sync(() => {
        seen.settled = { cost, usage }
      }),
    abandon: (reason) =>
      Effect.sync(() => {
        seen.abandoned = reason
      })
  }
  return { hold, seen }
}

/** Runs line `input` of `state` to its result and commits it. Never fails: every outcome is a line result. */
export const runLine = (
  services: LineServices,
  state: BatchState,
  key: AuthenticatedKey,
  input: InputLine,
  commits: LineCommits
) =>
  Effect.gen(function* () {
    const commit = commits.finish
    const requestId = lineRequestId(state.batchId, input.line)
    const holdId = lineHoldId(state.batchId, input.line)
    const base = { line: input.line, customId: input.customId, requestId }
    const chat: ChatInput = { dialect: "openai", body: input.body, key, requestId }
    const planned = yield* Effect.result(planChat(services.registry, services.dialects, chat))
    if (planned._tag === "Failure") {
      const why = refusal(planned.failure)
      return yield* commit(failed(base, null, why.status, { code: why.code, message: why.message }), { _tag: "None" })
    }
    const plan = { ...planned.success, model: batchPriced(planned.success.model) }
    const amount = plan.plugin.pricing.estimate({ request: plan.request, inputTokens: plan.inputTokens }, plan.model)
    // Started by an earlier run that stopped before its result: the line runs again under the hold it placed.
    if (!state.started.has(input.line)) {
      const started = yield* commits.start(input.line, {
        accountId: key.accountId,
        amount,
        keyId: key.keyId,
        keySpendLimit: key.spendLimit,
        model: plan.modelId,
        plugin: plan.plugin.id,
        requestId,
        holdId,
        // The batch's worker governs it, not the sweep: a restarted run continues under the hold it placed.
        ttlSeconds: null
      })
      // Another run started it meanwhile (a worker that lost its lease): that run, or the next, finishes it.
      if (started === "taken") return
      if (started !== "started") {
        const why = refusal(started)
        return yield* commit(failed(base, null, why.status, { code: why.code, message: started.message }), {
          _tag: "None"
        })
      }
    }
    const called = yield* Effect.exit(
      services.deployments.route(plan.model, plan.hint, (deployment) =>
        plan.plugin.invoke({
          model: deployment,
          request: plan.request,
          client: plan.clientCall,
          requestId,
          signal: new AbortController().signal
        })
      )
    )
    if (Exit.isFailure(called)) {
      const failure = Exit.findErrorOption(called)
      const reason: PluginFailure["reason"] = failure._tag === "Some" ? failure.value.reason : "unavailable"
      const message = failure._tag === "Some" ? failure.value.message : "the upstream call failed"
      return yield* commit(
        failed(base, holdId, lineStatus(reason), {
          code: failure._tag === "Some" ? (failure.value.code ?? reason) : reason,
          message
        }),
        {
          _tag: "Release",
          holdId,
          reason: reason === "invalid_request" ? "rejected" : "failed"
        }
      )
    }
    const reply = called.value
    if (reply._tag !== "Body") {
      const error = { code: "unexpected_stream", message: "the upstream streamed a reply to a non-streamed request" }
      return yield* commit(failed(base, holdId, 502, error), { _tag: "Release", holdId, reason: "failed" })
    }
    const { hold, seen } = deferredHold(holdId)
    const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const delivered = yield* Effect.result(
      deliverJson({ dialects: services.dialects, store: services.responses }, plan, chat, hold, reply, created)
    )
    if (delivered._tag === "Failure" || delivered.success._tag !== "Json" || seen.settled === undefined) {
      const error = { code: "upstream_unreadable", message: "the upstream sent a response the gateway cannot read" }
      return yield* commit(failed(base, holdId, 502, error), { _tag: "Release", holdId, reason: "failed" })
    }
    const { cost, usage } = seen.settled
    const result: LineResult = {
      ...base,
      outcome: "succeeded",
      holdId,
      cost: formatMicros(cost),
      response: { statusCode: 200, body: delivered.success.body },
      error: null
    }
    return yield* commit(result, { _tag: "Settle", holdId, cost, usage })
  })
