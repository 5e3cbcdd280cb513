/**
 * The alert a batch's end raises (docs/alerts.md): `batch.completed`, `batch.failed`, `batch.expired` or
 * `batch.cancelled`, once per batch (its event id comes from the batch id, whoever notices the end), with the
 * batch's counts and what its lines cost and had refunded, as decimal strings.
 */
import { Duration, Effect, Schedule } from "effect"
import type { BatchEnding, BatchState } from "../../domain/batch/BatchJob.ts"
import { formatMicros } from "../../domain/Money.ts"
import type { Alerts, RaisedEvent } from "../alerts/Alerts.ts"
import type { AlertEventType } from "../config/decodeAlerts.ts"
import type { BatchMoney, BatchStore } from "../ports/BatchStore.ts"
import { lineHoldIds } from "./BatchOutput.ts"

const TYPES: Readonly<Record<BatchEnding, AlertEventType>> = {
  completed: "batch.completed",
  failed: "batch.failed",
  expired: "batch.expired",
  cancelled: "batch.cancelled"
}

/** The event for `state`, a batch that has just ended (undefined for one that has not). */
export const batchEndedAlert = (state: BatchState, money: BatchMoney): RaisedEvent | undefined => {
  const status = state.status
  if (status !== "completed" && status !== "failed" && status !== "expired" && status !== "cancelled") {
    return undefined
  }
  return {
    key: `batch.ended:${state.batchId}`,
    type: TYPES[status],
    accountId: state.accountId,
    data: {
      accountId: state.accountId,
      batchId: state.batchId,
      keyId: state.key.keyId,
      endpoint: state.endpoint,
      status,
      requestCounts: { total: state.customIds.length, completed: state.succeeded, failed: state.failed },
      charged: formatMicros(state.cost),
      refunded: formatMicros(money.refunded),
      message: state.message,
      createdAt: state.createdAt,
      endedAt: state.times[status] ?? state.updatedAt
    }
  }
}

/**
 * Raises the alert of a batch that has just ended: what its holds had refunded read first (a read that keeps failing
 * is logged and the alert given up; raising itself never fails).
 */
export const alertWhenEnded =
  (store: BatchStore["Service"], alerts: Alerts["Service"]) =>
  (state: BatchState): Effect.Effect<void> =>
    store.money(state.accountId, lineHoldIds(state.batchId, state.customIds.length)).pipe(
      Effect.retry({ times: 3, schedule: Schedule.exponential(Duration.millis(200)) }),
      Effect.flatMap((money) => {
        const event = batchEndedAlert(state, money)
        return event === undefined ? Effect.void : alerts.raise(event)
      }),
      Effect.catch((error) =>
        Effect.logError("a batch's end alert could not be raised").pipe(
          Effect.annotateLogs({ batchId: state.batchId, error: error.message })
        )
      )
    )
