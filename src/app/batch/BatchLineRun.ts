/**
 * One batch line, run as the interactive call on its endpoint would run (LinePlans.ts), under the line's own hold:
 * the hold is placed with the line's start (unless an earlier run placed it), and the line's result then commits with
 * the ledger command that bills or refunds that hold (`commits.finish`): neither can be written without the other.
 */
import { Effect } from "effect"
import type { InputLine, LineEndpoint } from "../../domain/batch/BatchInput.ts"
import type { BatchState, LineResult } from "../../domain/batch/BatchJob.ts"
import type { RefundReason } from "../../domain/ledger/LedgerEvent.ts"
import { usageMetrics } from "../../domain/ledger/UsageMetrics.ts"
import { formatMicros, type Micros } from "../../domain/Money.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { PlaceHoldInput } from "../Ledger.ts"
import type { LedgerRejected } from "../LedgerErrors.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import { lineHoldId, lineRequestId } from "./BatchOutput.ts"
import { type LineServices, planLine } from "./LinePlans.ts"

export type { LineServices } from "./LinePlans.ts"

/** What a line's result commits with: a settlement or a release of its hold, or nothing (no hold was placed). */
export type LineMoney =
  | { readonly _tag: "Settle"; readonly holdId: string; readonly cost: Micros; readonly usage: unknown }
  | { readonly _tag: "Release"; readonly holdId: string; readonly reason: RefundReason }
  | { readonly _tag: "None" }

/** Fails only when the store is unreachable: the line then runs again in a later round. */
export type Commit = (result: LineResult, money: LineMoney) => Effect.Effect<void, StoreUnavailable>

/** `commit`, counting a settled line's tokens towards its key's `tpm` once it is committed, as an interactive call's. */
export const countingTokens =
  (commit: Commit, recordTokens: (keyId: string, tokens: number) => Effect.Effect<void>, keyId: string): Commit =>
  (result, money) =>
    money._tag !== "Settle"
      ? commit(result, money)
      : Effect.tap(commit(result, money), () => {
          const { inputTokens, outputTokens } = usageMetrics(money.usage)
          return recordTokens(keyId, inputTokens + outputTokens)
        })

/** A line's two commits: its start with its hold's placing, its result with the hold's resolution. */
export interface LineCommits {
  readonly start: (
    line: number,
    hold: PlaceHoldInput & { readonly holdId: string }
  ) => Effect.Effect<"started" | "taken" | LedgerRejected, StoreUnavailable>
  readonly finish: Commit
}

export const failedLine = (
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

/** A line answered: its reply as the output file's `response.body`, and what it cost. */
export const succeededLine = (
  base: Pick<LineResult, "line" | "customId" | "requestId">,
  holdId: string,
  delivered: { readonly body: unknown; readonly cost: Micros }
): LineResult => ({
  ...base,
  outcome: "succeeded",
  holdId,
  cost: formatMicros(delivered.cost),
  response: { statusCode: 200, body: delivered.body },
  error: null
})

/**
 * What a run of a line did: it ran to its result (or another run has it), or it found every deployment at its limits
 * (or at the batch's share of them) and left the line for a later round, under the hold it placed.
 */
export type LineRun = "ran" | "waiting"

/** Runs line `input` of `state` with `key` to its result and commits it. Fails only when the store is unreachable. */
export const runLine = (
  services: LineServices,
  state: BatchState,
  key: AuthenticatedKey,
  input: InputLine,
  commits: LineCommits
): Effect.Effect<LineRun, StoreUnavailable> =>
  Effect.gen(function* () {
    const requestId = lineRequestId(state.batchId, input.line)
    const holdId = lineHoldId(state.batchId, input.line)
    const base = { line: input.line, customId: input.customId, requestId }
    const endpoint = state.endpoint as LineEndpoint
    const planned = yield* planLine(services, endpoint, key, input.body, requestId)
    if (planned._tag === "Failure") {
      const { status, code, message } = planned.failure
      yield* commits.finish(failedLine(base, null, status, { code, message }), { _tag: "None" })
      return "ran"
    }
    const plan = planned.success
    // Started by an earlier run that stopped before its result: the line runs again under the hold it placed.
    if (!state.started.has(input.line)) {
      const started = yield* commits.start(input.line, {
        accountId: key.accountId,
        amount: plan.amount,
        keyId: key.keyId,
        keySpendLimit: key.spendLimit,
        model: plan.modelId,
        plugin: plan.pluginId,
        requestId,
        holdId,
        // The batch's worker governs it, not the sweep: a restarted run continues under the hold it placed.
        ttlSeconds: null
      })
      // Another run started it meanwhile (a worker that lost its lease): that run, or the next, finishes it.
      if (started === "taken") return "ran"
      if (started !== "started") {
        const error = { code: "insufficient_quota", message: started.message }
        yield* commits.finish(failedLine(base, null, 402, error), { _tag: "None" })
        return "ran"
      }
    }
    const ran = yield* Effect.result(plan.run)
    if (ran._tag === "Failure") {
      const { status, code, message, release, wait } = ran.failure
      if (wait) return "waiting"
      yield* commits.finish(failedLine(base, holdId, status, { code, message }), {
        _tag: "Release",
        holdId,
        reason: release
      })
      return "ran"
    }
    const { cost, usage } = ran.success
    yield* commits.finish(succeededLine(base, holdId, ran.success), { _tag: "Settle", holdId, cost, usage })
    return "ran"
  })
