/**
 * The admin API under /admin, guarded by `Authorization: Bearer <admin token>` (compared in constant time).
 * Money is rendered as decimal strings ("12.500000").
 */
import { rateLimitProblem } from "../../domain/keys/RateLimits.ts"
import { Clock, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { createHash, timingSafeEqual } from "node:crypto"
import { Accounts, type AccountView } from "../../app/Accounts.ts"
import type { StoredEvent } from "../../app/EventStore.ts"
import { Keys, type KeyView } from "../../app/Keys.ts"
import { Ledger } from "../../app/Ledger.ts"
import { parseBound, Statements } from "../../app/Statements.ts"
import { formatMicros, parseDecimal } from "../../domain/Money.ts"
import { apiError, badRequest, notFound } from "../ApiError.ts"
import { throttled } from "../AuthThrottle.ts"
import { checkRequestParameters } from "../InputLimits.ts"
import { readJsonAs } from "../RequestBody.ts"
import { HttpSettings, json, route } from "../Route.ts"
import { DecimalAmount, IsoInstant, ModelList, Name, PositiveDecimalAmount } from "../Schemas.ts"

export class AdminToken extends Context.Service<AdminToken, Redacted.Redacted<string>>()("tollgate/http/AdminToken") {}

const digest = (text: string) => createHash("sha256").update(text).digest()

const checkAdminToken = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const token = yield* AdminToken
  const header = request.headers.authorization ?? ""
  const presented = header.startsWith("Bearer ") ? header.slice("Bearer ".length).trim() : ""
  // Digests have equal length, so the comparison time does not depend on where the strings differ.
  if (presented.length === 0 || !timingSafeEqual(digest(presented), digest(Redacted.value(token)))) {
    return yield* apiError(401, "a valid admin token is required: send 'Authorization: Bearer <admin token>'", {
      code: "invalid_admin_token"
    })
  }
})

// A wrong admin token counts towards the caller's failed-authentication throttle, like a wrong API key.
export const requireAdmin = throttled(checkAdminToken)

/** An admin handler: the admin token first, then the request's parameters (InputLimits.ts), then the handler. */
export const admin = <A, E, R>(handler: Effect.Effect<A, E, R>) =>
  Effect.andThen(requireAdmin, Effect.andThen(checkRequestParameters, handler))

export const balanceView = (a: Pick<AccountView, "deposited" | "captured" | "held">) => ({
  deposited: formatMicros(a.deposited),
  captured: formatMicros(a.captured),
  held: formatMicros(a.held),
  available: formatMicros(a.deposited - a.captured - a.held)
})

const accountView = (a: AccountView) => ({ id: a.id, name: a.name, createdAt: a.createdAt, balance: balanceView(a) })

export const keyView = (k: KeyView) => ({
  id: k.id,
  name: k.name,
  accountId: k.accountId,
  prefix: k.prefix,
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
  expiresAt: k.expiresAt,
  models: k.models,
  spendLimit: k.spendLimit === null ? null : formatMicros(k.spendLimit),
  rateLimits: k.rateLimits,
  spent: formatMicros(k.spent),
  held: formatMicros(k.held),
  revokedAt: k.revokedAt
})

/** A ledger entry: the event's own fields flattened, plus where it sits. */
export const ledgerEntry = (event: StoredEvent) => {
  const data = event.data as Record<string, unknown>
  const metadata = event.metadata
  return {
    position: Number(event.streamPosition),
    globalPosition: Number(event.globalPosition),
    type: event.type,
    amount: (data.amount ?? data.captured ?? null) as string | null,
    holdId: (data.holdId ?? null) as string | null,
    requestId: (data.requestId ?? metadata.requestId ?? null) as string | null,
    keyId: (data.keyId ?? metadata.keyId ?? null) as string | null,
    model: (data.model ?? null) as string | null,
    at: (data.at ?? event.recordedAt.toISOString()) as string,
    data
  }
}

const CreateAccount = Schema.Struct({ name: Name })
const Deposit = Schema.Struct({ amount: PositiveDecimalAmount, reference: Name })
/** A positive integer that fits a Postgres integer. */
const RateLimitFigure = Schema.Number.annotate({ message: "expected a positive integer" }).check(
  Schema.makeFilter((value: number) => rateLimitProblem(value))
)

const CreateKey = Schema.Struct({
  name: Name,
  models: Schema.optional(Schema.NullOr(ModelList)),
  expiresAt: Schema.optional(Schema.NullOr(IsoInstant)),
  spendLimit: Schema.optional(Schema.NullOr(DecimalAmount)),
  rateLimits: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        rpm: Schema.optional(Schema.NullOr(RateLimitFigure)),
        tpm: Schema.optional(Schema.NullOr(RateLimitFigure)),
        concurrency: Schema.optional(Schema.NullOr(RateLimitFigure))
      })
    )
  )
})

const pathParam = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const intParam = (request: HttpServerRequest.HttpServerRequest, name: string, fallback: number, max: number) =>
  Effect.gen(function* () {
    const raw = new URL(request.url, "http://x").searchParams.get(name)
    if (raw === null || raw === "") return fallback
    if (!/^\d{1,15}$/.test(raw)) return yield* badRequest(`${name} must be a non-negative integer`, name)
    return Math.min(Number(raw), max)
  })

export const layer = Layer.mergeAll(
  route(
    "POST",
    "/admin/accounts",
    admin(
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const settings = yield* HttpSettings
        const body = yield* readJsonAs(request, settings, CreateAccount)
        const account = yield* (yield* Ledger).openAccount(body.name.trim())
        return json(account, 201)
      })
    )
  ),
  route(
    "GET",
    "/admin/accounts",
    admin(
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const url = new URL(request.url, "http://x")
        const limit = yield* intParam(request, "limit", 100, 1000)
        const search = Option.fromNullishOr(url.searchParams.get("search")).pipe(Option.getOrUndefined)
        const accounts = yield* (yield* Accounts).list({ limit, ...(search ? { search } : {}) })
        return json({ data: accounts.map(accountView) })
      })
    )
  ),
  route(
    "GET",
    "/admin/accounts/:id",
    admin(
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const accountId = yield* pathParam("id")
        const asOf = new URL(request.url, "http://x").searchParams.get("asOf")
        if (asOf !== null && asOf !== "") {
          // A past balance is folded from the events, not read from the projection.
          const bound = parseBound(asOf)
          if (bound === undefined) {
            return yield* badRequest(
              'asOf must be an ISO 8601 instant (such as "2026-01-31T00:00:00Z") or a global position (digits only)',
              "asOf",
              "invalid_parameter"
            )
          }
          const state = yield* (yield* Statements).asOf(accountId, bound)
          return json({ id: accountId, name: state.name, createdAt: state.createdAt, balance: balanceView(state) })
        }
        const account = yield* (yield* Accounts).get(accountId)
        return json(accountView(account))
      })
    )
  ),
  route(
    "POST",
    "/admin/accounts/:id/deposits",
    admin(
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const settings = yield* HttpSettings
        const accountId = yield* pathParam("id")
        const body = yield* readJsonAs(request, settings, Deposit)
        const amount = parseDecimal(body.amount) as bigint
        const accounts = yield* Accounts
        // A deposit whose new total would pass the 64-bit balance is refused by the ledger's decider (400): only it
        // sees the total under the account's lock, and a retry of the deposit that filled it is still a duplicate.
        yield* accounts.get(accountId)
        const result = yield* (yield* Ledger).deposit(accountId, amount, body.reference).pipe(
          Effect.catchIf(
            (error) => error._tag === "LedgerRejected" && error.reason === "InvalidAmount",
            (error) => Effect.fail(badRequest(`amount: ${error.message}`, "amount", "invalid_amount"))
          )
        )
        const account = yield* accounts.get(accountId)
        return json(
          {
            accountId,
            amount: formatMicros(amount),
            reference: body.reference,
            duplicate: result.duplicate,
            balance: balanceView(account)
          },
          result.duplicate ? 200 : 201
        )
      })
    )
  ),
  route(
    "POST",
    "/admin/accounts/:id/keys",
    admin(
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const settings = yield* HttpSettings
        const accountId = yield* pathParam("id")
        const body = yield* readJsonAs(request, settings, CreateKey)
        // A key born expired is a typo: refused, as the CLI does.
        const expiresAt = body.expiresAt == null ? null : Date.parse(body.expiresAt)
        if (expiresAt !== null && expiresAt <= (yield* Clock.currentTimeMillis)) {
          return yield* badRequest("expiresAt: must be in the future", "expiresAt", "invalid_value")
        }
        const created = yield* (yield* Keys).create(accountId, {
          name: body.name.trim(),
          models: body.models ?? null,
          expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
          spendLimit: body.spendLimit == null ? null : (parseDecimal(body.spendLimit) as bigint),
          rateLimits: {
            rpm: body.rateLimits?.rpm ?? null,
            tpm: body.rateLimits?.tpm ?? null,
            concurrency: body.rateLimits?.concurrency ?? null
          }
        })
        return json({ ...keyView(created), key: created.key }, 201)
      })
    )
  ),
  route(
    "GET",
    "/admin/accounts/:id/keys",
    admin(
      Effect.gen(function* () {
        const keys = yield* (yield* Keys).list(yield* pathParam("id"))
        return json({ data: keys.map(keyView) })
      })
    )
  ),
  route(
    "DELETE",
    "/admin/keys/:keyId",
    admin(
      Effect.gen(function* () {
        const key = yield* (yield* Keys).revoke(yield* pathParam("keyId"))
        return json(keyView(key))
      })
    )
  ),
  route(
    "GET",
    "/admin/accounts/:id/ledger",
    admin(
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const after = yield* intParam(request, "after", 0, Number.MAX_SAFE_INTEGER)
        const limit = yield* intParam(request, "limit", 100, 1000)
        const events = yield* (yield* Accounts).ledger(yield* pathParam("id"), BigInt(after), limit + 1)
        const page = events.slice(0, limit).map(ledgerEntry)
        return json({ data: page, next: events.length > limit ? page[page.length - 1].position : null })
      })
    )
  ),
  // Any other path under /admin: 401 without the token (nothing to learn about which routes exist), else 404.
  route(
    "*",
    "/admin/*",
    admin(
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.fail(notFound(`no admin route ${request.method} ${new URL(request.url, "http://x").pathname}`))
      )
    )
  )
)
