/**
 * A vendor batch's result for one line (VendorLines.ts) as the line's result: a reply delivered as the interactive
 * call's would be (LinePlans.ts `vendor.deliver`: read, priced at batch prices, in the client's protocol) and settled;
 * an error, an expiry or a cancellation with its hold released.
 */
import { Effect } from "effect"
import type { InputLine, LineEndpoint } from "../../domain/batch/BatchInput.ts"
import type { BatchState, LineResult } from "../../domain/batch/BatchJob.ts"
import { formatMicros, parseDecimal } from "../../domain/Money.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { VendorLineResult } from "../ports/VendorBatches.ts"
import { type Commit, failedLine, succeededLine } from "./BatchLineRun.ts"
import { lineHoldId, lineRequestId } from "./BatchOutput.ts"
import { type LineServices, planLine } from "./LinePlans.ts"

/** A vendor's result for `input` as the line's result, with its hold's settlement or release. */
export const finishLine = (
  services: LineServices,
  state: BatchState,
  key: AuthenticatedKey,
  input: InputLine,
  result: VendorLineResult,
  commit: Commit
) =>
  Effect.gen(function* () {
    const base = { line: input.line, customId: input.customId, requestId: lineRequestId(state.batchId, input.line) }
    const holdId = state.started.get(input.line) ?? lineHoldId(state.batchId, input.line)
    const fail = (status: number, code: string, message: string, reason: "failed" | "rejected" | "expired") =>
      commit(failedLine(base, holdId, status, { code, message }), { _tag: "Release", holdId, reason })
    switch (result._tag) {
      case "Errored":
        return yield* fail(
          result.status,
          result.status < 500 ? "invalid_request" : "upstream_error",
          `the vendor's batch refused this request: ${result.message}`,
          result.status < 500 ? "rejected" : "failed"
        )
      case "Expired":
        return yield* fail(502, "vendor_batch_expired", "the vendor's batch expired before this request ran", "expired")
      case "Cancelled": {
        const error = { code: "batch_cancelled", message: "the batch was cancelled before this request finished" }
        const cut: LineResult = {
          ...base,
          outcome: "cancelled",
          holdId,
          cost: formatMicros(0n),
          response: null,
          error
        }
        return yield* commit(cut, { _tag: "Release", holdId, reason: "cancelled" })
      }
      case "Succeeded": {
        const requestId = lineRequestId(state.batchId, input.line)
        const planned = yield* planLine(services, state.endpoint as LineEndpoint, key, input.body, requestId)
        const answer =
          planned._tag === "Success" ? yield* Effect.result(planned.success.vendor.deliver(result.reply)) : undefined
        if (answer === undefined || answer._tag === "Failure") {
          return yield* fail(502, "upstream_unreadable", "the vendor sent a result the gateway cannot read", "failed")
        }
        const { cost, usage } = answer.success
        return yield* commit(succeededLine(base, holdId, answer.success), { _tag: "Settle", holdId, cost, usage })
      }
    }
  })

/** The batch's key as it was at submit: what a cancelled batch's vendor results are delivered with once it is gone. */
export const submitKey = (state: BatchState): AuthenticatedKey => ({
  keyId: state.key.keyId,
  accountId: state.accountId,
  models: state.key.models,
  spendLimit: state.key.spendLimit === null ? null : (parseDecimal(state.key.spendLimit) ?? null)
})
