/**
 * Every account's batches for the operator (docs/admin-and-cli.md): `GET /admin/batches` (newest first; `accountId`,
 * `status`, `limit`, `after`), `GET /admin/batches/{id}` (with what its line holds still hold, captured and refunded)
 * and `POST /admin/batches/{id}/cancel` — the holder's own cancellation (app/batch/BatchOperator.ts). Both surfaces'
 * batches, OpenAI's and Anthropic's, named by `surface`.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import type { BatchDetails } from "../../app/batch/BatchOperator.ts"
import { BatchOperator } from "../../app/batch/BatchOperator.ts"
import type { BatchRow } from "../../app/ports/BatchStore.ts"
import { MESSAGES_ENDPOINT } from "../../domain/batch/BatchInput.ts"
import { BATCH_STATUSES } from "../../domain/batch/BatchStatus.ts"
import { isUuid } from "../../domain/Ids.ts"
import { listPage } from "../../domain/ListPage.ts"
import { formatMicros } from "../../domain/Money.ts"
import { badRequest } from "../ApiError.ts"
import { limitParam } from "../InputLimits.ts"
import { json, route } from "../Route.ts"
import { admin } from "./AdminApi.ts"

const iso = (date: Date | null) => (date === null ? null : date.toISOString())

/** A batch row as the admin API shows it; money as decimal strings. */
export const adminBatchView = (row: BatchRow) => ({
  id: row.id,
  accountId: row.account_id,
  keyId: row.key_id,
  surface: row.endpoint === MESSAGES_ENDPOINT ? "anthropic" : "openai",
  endpoint: row.endpoint,
  status: row.status,
  requestCounts: {
    total: row.total,
    completed: row.completed,
    failed: row.failed,
    pending: row.total - row.completed - row.failed
  },
  charged: formatMicros(BigInt(row.cost)),
  createdAt: iso(row.created_at),
  expiresAt: iso(row.expires_at),
  inProgressAt: iso(row.in_progress_at),
  cancellingAt: iso(row.cancelling_at),
  endedAt: iso(row.completed_at ?? row.failed_at ?? row.expired_at ?? row.cancelled_at),
  outputFileId: row.output_file_id,
  errorFileId: row.error_file_id,
  error: row.errors?.message ?? null,
  metadata: row.metadata
})

const detailsView = ({ row, money }: BatchDetails) => ({
  ...adminBatchView(row),
  held: formatMicros(money.held),
  refunded: formatMicros(money.refunded)
})

const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")

const list = admin(
  Effect.gen(function* () {
    const query = new URL((yield* HttpServerRequest.HttpServerRequest).url, "http://x").searchParams
    const limit = yield* limitParam(query, 20, 100)
    const accountId = query.get("accountId") ?? ""
    if (accountId !== "" && !isUuid(accountId)) return yield* badRequest("accountId: expected a uuid", "accountId")
    const status = query.get("status") ?? ""
    if (status !== "" && !(BATCH_STATUSES as ReadonlyArray<string>).includes(status)) {
      return yield* badRequest(`status: expected one of ${BATCH_STATUSES.join(", ")}`, "status")
    }
    const page = yield* (yield* BatchOperator).list({
      limit,
      after: query.get("after") || undefined,
      accountId: accountId === "" ? undefined : accountId,
      status: status === "" ? undefined : status
    })
    return json(listPage(page.rows.map(adminBatchView), page.hasMore))
  })
)

const show = admin(
  Effect.gen(function* () {
    const details = yield* (yield* BatchOperator).show(yield* idParam)
    return json(detailsView(details))
  })
)

const cancel = admin(
  Effect.gen(function* () {
    const details = yield* (yield* BatchOperator).cancel(yield* idParam)
    return json(detailsView(details))
  })
)

export const layer = Layer.mergeAll(
  route("GET", "/admin/batches", list),
  route("GET", "/admin/batches/:id", show),
  route("POST", "/admin/batches/:id/cancel", cancel)
)
