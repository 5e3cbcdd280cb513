/**
 * Usage and balance for the two audiences: the operator (`GET /admin/usage`, any account) and a key holder
 * (`GET /v1/usage`, `GET /v1/balance`, their own account only, with their API key); and each request's own charge
 * (`GET /v1/usage/requests`, `GET /admin/usage/requests?accountId=`), found by the `x-request-id` its response carried.
 */
import { clip } from "../domain/Quoted.ts"
import { limitParam } from "./InputLimits.ts"
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { Accounts } from "../app/Accounts.ts"
import { Keys } from "../app/Keys.ts"
import {
  type RequestCharge,
  type RequestChargeQuery,
  USAGE_GROUPS,
  type UsageGroup,
  type UsageLine,
  type UsageQuery,
  UsageReports,
  decodeChargeCursor,
  encodeChargeCursor
} from "../app/UsageReports.ts"
import { isUuid } from "../domain/Ids.ts"
import { parseDay, parseInstant } from "../domain/Instants.ts"
import { formatMicros } from "../domain/Money.ts"
import { badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { admin } from "./admin/AdminApi.ts"
import { json, route } from "./Route.ts"

/** A day bound from `YYYY-MM-DD` or an ISO 8601 instant (its UTC day), on the calendar and within years 1–9999. */
const dayOf = (name: string, value: string | null) => {
  if (value === null || value === "") return Effect.succeed(undefined)
  const day = parseDay(value)
  if (day !== undefined) return Effect.succeed(day)
  const ms = parseInstant(value)
  return ms === undefined
    ? Effect.fail(
        badRequest(
          `${name}: expected a date (YYYY-MM-DD) or an ISO 8601 instant with a zone, between years 1 and 9999, that exists on the calendar, got '${clip(value)}'`,
          name
        )
      )
    : Effect.succeed(new Date(ms).toISOString().slice(0, 10))
}

const uuidParam = (name: string, value: string | null) =>
  value === null || value === ""
    ? Effect.succeed(undefined)
    : isUuid(value)
      ? Effect.succeed(value)
      : Effect.fail(badRequest(`${name}: expected a uuid`, name))

const readQuery = (params: URLSearchParams) =>
  Effect.gen(function* () {
    const groupText = params.get("groupBy") ?? ""
    const groupBy = groupText === "" ? [] : groupText.split(",").map((g) => g.trim())
    for (const group of groupBy) {
      if (!(USAGE_GROUPS as ReadonlyArray<string>).includes(group)) {
        return yield* badRequest(`groupBy: expected a comma-separated subset of ${USAGE_GROUPS.join(", ")}`, "groupBy")
      }
    }
    const query: UsageQuery = {
      accountId: yield* uuidParam("accountId", params.get("accountId")),
      keyId: yield* uuidParam("keyId", params.get("keyId")),
      model: params.get("model") ?? undefined,
      from: yield* dayOf("from", params.get("from")),
      to: yield* dayOf("to", params.get("to")),
      groupBy: [...new Set(groupBy)] as ReadonlyArray<UsageGroup>
    }
    return query
  })

const lineView = (line: UsageLine) => ({
  ...(line.day === undefined ? {} : { day: line.day }),
  ...(line.model === undefined ? {} : { model: line.model }),
  ...(line.key === undefined ? {} : { key: line.key }),
  requests: Number(line.requests),
  inputTokens: Number(line.inputTokens),
  outputTokens: Number(line.outputTokens),
  cacheReadTokens: Number(line.cacheReadTokens),
  cacheWriteTokens: Number(line.cacheWriteTokens),
  images: Number(line.images),
  videoSeconds: Number(line.videoSeconds),
  cost: formatMicros(line.cost)
})

const searchParams = Effect.map(HttpServerRequest.HttpServerRequest, (r) => new URL(r.url, "http://x").searchParams)

const adminUsage = admin(
  Effect.gen(function* () {
    const query = yield* readQuery(yield* searchParams)
    const lines = yield* (yield* UsageReports).report(query)
    return json({ data: lines.map(lineView) })
  })
)

const ownUsage = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const params = yield* searchParams
  if (params.get("accountId") !== null && params.get("accountId") !== key.accountId) {
    return yield* badRequest("accountId: a key sees only its own account's usage", "accountId")
  }
  const query = yield* readQuery(params)
  const lines = yield* (yield* UsageReports).report({ ...query, accountId: key.accountId })
  return json({ data: lines.map(lineView) })
})

const chargeView = (charge: RequestCharge) => ({
  requestId: charge.requestId,
  model: charge.model,
  keyId: charge.keyId,
  status: charge.status,
  held: formatMicros(charge.held),
  cost: formatMicros(charge.cost),
  createdAt: charge.createdAt.toISOString(),
  resolvedAt: charge.resolvedAt?.toISOString() ?? null
})

/**
 * `limit` (1–1000, default 100), `cursor` (the previous page's `next_cursor`), `before` (an ISO instant: only requests
 * placed before it), `requestId`, `keyId`.
 */
const readChargeQuery = (params: URLSearchParams, accountId: string) =>
  Effect.gen(function* () {
    const limit = yield* limitParam(params, 100, 1000)
    const beforeText = params.get("before")
    const before = beforeText === null || beforeText === "" ? undefined : parseInstant(beforeText)
    if (beforeText !== null && beforeText !== "" && before === undefined) {
      return yield* badRequest("before: expected an ISO 8601 instant with a zone", "before")
    }
    const cursorText = params.get("cursor")
    const after = cursorText === null || cursorText === "" ? undefined : decodeChargeCursor(cursorText)
    if (cursorText !== null && cursorText !== "" && after === undefined) {
      return yield* badRequest("cursor: expected the next_cursor of a previous page", "cursor")
    }
    const requestId = params.get("requestId") ?? undefined
    if (requestId !== undefined && (requestId.length === 0 || requestId.length > 200)) {
      return yield* badRequest("requestId: expected 1 to 200 characters", "requestId")
    }
    return {
      accountId,
      keyId: yield* uuidParam("keyId", params.get("keyId")),
      requestId,
      before: before === undefined ? undefined : new Date(before),
      after,
      limit
    }
  })

const chargesOf = (query: RequestChargeQuery) =>
  Effect.gen(function* () {
    const charges = yield* (yield* UsageReports).requests({ ...query, limit: query.limit + 1 })
    const page = charges.slice(0, query.limit)
    const last = page.at(-1)
    const hasMore = charges.length > query.limit
    return json({
      object: "list",
      data: page.map(chargeView),
      has_more: hasMore,
      next_cursor: hasMore && last !== undefined ? encodeChargeCursor(last.cursor) : null
    })
  })

const ownRequests = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return yield* chargesOf(yield* readChargeQuery(yield* searchParams, key.accountId))
})

const adminRequests = admin(
  Effect.gen(function* () {
    const params = yield* searchParams
    const accountId = yield* uuidParam("accountId", params.get("accountId"))
    if (accountId === undefined) return yield* badRequest("accountId: required (a uuid)", "accountId")
    return yield* chargesOf(yield* readChargeQuery(params, accountId))
  })
)

const balance = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const account = yield* (yield* Accounts).get(key.accountId)
  const keys = yield* (yield* Keys).list(key.accountId)
  const own = keys.find((k) => k.id === key.keyId)
  const settled = account.deposited - account.captured
  return json({
    balance: formatMicros(settled),
    held: formatMicros(account.held),
    available: formatMicros(settled - account.held),
    key: {
      id: key.keyId,
      spent: formatMicros(own?.spent ?? 0n),
      held: formatMicros(own?.held ?? 0n),
      spendLimit: own?.spendLimit === null || own?.spendLimit === undefined ? null : formatMicros(own.spendLimit)
    }
  })
})

export const layer = Layer.mergeAll(
  route("GET", "/admin/usage", adminUsage),
  route("GET", "/admin/usage/requests", adminRequests),
  route("GET", "/v1/usage", ownUsage, "openai"),
  route("GET", "/v1/usage/requests", ownRequests, "openai"),
  route("GET", "/v1/balance", balance, "openai")
)
