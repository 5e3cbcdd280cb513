/**
 * Batches as the operator sees them (`/admin/batches`, `tollgate batches`): every account's, with what each one's
 * line holds amount to — still held, captured, refunded — read from the ledger's holds by the lines' hold ids. A
 * cancellation is the holder's own (`Batches.cancel`, on the batch's account): one decision, whoever asks.
 */
import { Context, Effect, Layer } from "effect"
import { type BatchMoney, type BatchRow, BatchStore, type OperatorBatchPage } from "../ports/BatchStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import { type BatchNotCancellable, BatchNotFound } from "./BatchErrors.ts"
import { lineHoldIds } from "./BatchOutput.ts"
import { Batches } from "./Batches.ts"

/** A batch and its money. */
export interface BatchDetails {
  readonly row: BatchRow
  readonly money: BatchMoney
}

export class BatchOperator extends Context.Service<
  BatchOperator,
  {
    readonly list: (
      page: OperatorBatchPage
    ) => Effect.Effect<{ readonly rows: ReadonlyArray<BatchRow>; readonly hasMore: boolean }, StoreUnavailable>
    readonly show: (id: string) => Effect.Effect<BatchDetails, BatchNotFound | StoreUnavailable>
    readonly cancel: (id: string) => Effect.Effect<BatchDetails, BatchNotFound | BatchNotCancellable | StoreUnavailable>
  }
>()("tollgate/app/batch/BatchOperator") {
  static readonly layer = Layer.effect(
    BatchOperator,
    Effect.gen(function* () {
      const store = yield* BatchStore
      const batches = yield* Batches
      const details = (row: BatchRow) =>
        Effect.map(store.money(row.account_id, lineHoldIds(row.id, row.total)), (money) => ({ row, money }))
      const find = (id: string) =>
        Effect.flatMap(store.findAny(id), (row) =>
          row === undefined ? Effect.fail(new BatchNotFound({ batchId: id })) : Effect.succeed(row)
        )
      return BatchOperator.of({
        list: (page) =>
          Effect.map(store.listAll(page), (rows) => ({
            rows: rows.slice(0, page.limit),
            hasMore: rows.length > page.limit
          })),
        show: (id) => Effect.flatMap(find(id), details),
        cancel: (id) =>
          Effect.gen(function* () {
            const row = yield* find(id)
            return yield* details(yield* batches.cancel(row.account_id, id))
          })
      })
    })
  )
}
