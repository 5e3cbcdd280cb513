/**
 * Alert webhooks through the admin API (docs/alerts.md): an account's own endpoints
 * (`POST`/`GET /admin/accounts/{id}/alerts`, `DELETE /admin/alerts/{endpointId}`), and the delivery outbox
 * (`GET /admin/alerts/deliveries`, `POST /admin/alerts/deliveries/{id}/resend`). A secret is accepted once and never
 * shown again.
 */
import { limitParam } from "../InputLimits.ts"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { Accounts } from "../../app/Accounts.ts"
import { Alerts } from "../../app/alerts/Alerts.ts"
import { eventsProblem, subscribes, webhookUrlProblem } from "../../app/config/decodeAlerts.ts"
import type { AlertDelivery, DeliveryStatus } from "../../app/ports/AlertStore.ts"
import type { FetchRefused } from "../../app/ports/FetchRefused.ts"
import { GuardedFetcher } from "../../app/ports/GuardedFetcher.ts"
import { isUuid } from "../../domain/Ids.ts"
import { formatMicros, parseDecimal } from "../../domain/Money.ts"
import { apiError, badRequest } from "../ApiError.ts"
import { readJsonAs } from "../RequestBody.ts"
import { HttpSettings, json, route } from "../Route.ts"
import { PositiveDecimalAmount } from "../Schemas.ts"
import { admin } from "./AdminApi.ts"

const Url = Schema.String.annotate({ message: "expected a string" }).check(
  Schema.makeFilter((text: string) =>
    text.length > 2048 ? "must be at most 2048 characters" : webhookUrlProblem(text)
  )
)
const Events = Schema.Array(Schema.String).check(Schema.makeFilter((events) => eventsProblem(events)))
const Secret = Schema.String.annotate({ message: "expected a string" }).check(
  Schema.makeFilter((text: string) =>
    text.length < 16 || text.length > 256 || !/^[\x21-\x7e]+$/.test(text)
      ? "must be 16 to 256 printable ASCII characters without spaces"
      : undefined
  )
)
const CreateEndpoint = Schema.Struct({
  url: Url,
  events: Events,
  secret: Secret,
  balanceBelow: Schema.optional(Schema.NullOr(PositiveDecimalAmount))
})

const STATUSES: ReadonlyArray<DeliveryStatus> = ["pending", "delivered", "failed"]

const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const endpointView = (endpoint: {
  readonly id: string
  readonly accountId: string | null
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly balanceBelow: bigint | null
  readonly createdAt: Date | null
}) => ({
  id: endpoint.id,
  accountId: endpoint.accountId,
  url: endpoint.url,
  events: endpoint.events,
  balanceBelow: endpoint.balanceBelow === null ? null : formatMicros(endpoint.balanceBelow),
  createdAt: endpoint.createdAt?.toISOString() ?? null
})

const deliveryView = (delivery: AlertDelivery) => ({
  id: delivery.id,
  eventId: delivery.eventId,
  type: delivery.eventType,
  endpoint: delivery.endpoint,
  accountId: delivery.accountId,
  url: delivery.url,
  status: delivery.status,
  attempts: delivery.attempts,
  nextAttemptAt: delivery.status === "pending" ? delivery.nextAttemptAt.toISOString() : null,
  lastStatus: delivery.lastStatus,
  lastError: delivery.lastError,
  createdAt: delivery.createdAt.toISOString(),
  deliveredAt: delivery.deliveredAt?.toISOString() ?? null,
  event: delivery.payload
})

/**
 * Refuses a webhook its deliveries could never reach under the guarded fetcher's address rule (loopback, private,
 * metadata, …), rather than storing it and retrying it for hours. A name that does not resolve yet is accepted:
 * every delivery is checked again.
 */
const refuseUnreachable = (url: string) =>
  Effect.gen(function* () {
    const fetcher = yield* GuardedFetcher
    return yield* fetcher.check(url, 5_000)
  }).pipe(
    Effect.catch((refused: FetchRefused) =>
      refused.reason === "dns" || refused.reason === "timeout"
        ? Effect.void
        : Effect.fail(badRequest(`url: ${refused.detail}`, "url"))
    )
  )

const create = admin(
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const accountId = yield* param("id")
    const body = yield* readJsonAs(request, yield* HttpSettings, CreateEndpoint)
    yield* (yield* Accounts).get(accountId)
    yield* refuseUnreachable(body.url)
    const balanceBelow =
      body.balanceBelow === undefined || body.balanceBelow === null ? null : (parseDecimal(body.balanceBelow) ?? null)
    if (balanceBelow === null && subscribes(body.events, "balance.low")) {
      return yield* badRequest("balanceBelow: required for balance.low (the balance to alert below)", "balanceBelow")
    }
    const created = yield* (yield* Alerts).addEndpoint(accountId, {
      url: body.url,
      events: body.events,
      secret: body.secret,
      balanceBelow
    })
    return json(endpointView(created), 201)
  })
)

const list = admin(
  Effect.gen(function* () {
    const accountId = yield* param("id")
    yield* (yield* Accounts).get(accountId)
    const endpoints = yield* (yield* Alerts).endpointsOf(accountId)
    return json({ object: "list", data: endpoints.map(endpointView) })
  })
)

const remove = admin(
  Effect.gen(function* () {
    const id = yield* param("endpointId")
    if (!isUuid(id) || !(yield* (yield* Alerts).removeEndpoint(id))) {
      return yield* apiError(404, "no alert endpoint has this id", { code: "alert_endpoint_not_found" })
    }
    return json({ id, deleted: true })
  })
)

const deliveries = admin(
  Effect.gen(function* () {
    const params = new URL((yield* HttpServerRequest.HttpServerRequest).url, "http://x").searchParams
    const accountId = params.get("accountId") ?? undefined
    if (accountId !== undefined && !isUuid(accountId))
      return yield* badRequest("accountId: expected a uuid", "accountId")
    const status = params.get("status") ?? undefined
    if (status !== undefined && !(STATUSES as ReadonlyArray<string>).includes(status)) {
      return yield* badRequest(`status: expected one of ${STATUSES.join(", ")}`, "status")
    }
    const limit = yield* limitParam(params, 100, 1000)
    const rows = yield* (yield* Alerts).deliveries({
      accountId,
      status: status as DeliveryStatus | undefined,
      limit
    })
    return json({ object: "list", data: rows.map(deliveryView) })
  })
)

const resend = admin(
  Effect.gen(function* () {
    const id = yield* param("id")
    if (!isUuid(id) || !(yield* (yield* Alerts).resend(id))) {
      return yield* apiError(404, "no alert delivery has this id", { code: "alert_delivery_not_found" })
    }
    return json({ id, status: "pending" })
  })
)

export const layer = Layer.mergeAll(
  route("POST", "/admin/accounts/:id/alerts", create),
  route("GET", "/admin/accounts/:id/alerts", list),
  route("DELETE", "/admin/alerts/:endpointId", remove),
  route("GET", "/admin/alerts/deliveries", deliveries),
  route("POST", "/admin/alerts/deliveries/:id/resend", resend)
)
