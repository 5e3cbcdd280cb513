/**
 * How every route answers: a request id on every response (`x-request-id`), and every failure — ours, the ledger's,
 * the store's — rendered as an ApiError in the envelope of the protocol that was called. Defects become a 500 in
 * that envelope with the request id, logged with their cause; nothing internal is echoed to the client.
 */
import { Clock, Context, Effect, Layer, Stream } from "effect"
import { HttpBody, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomUUID } from "node:crypto"
import { formatMicros, type Micros } from "../domain/Money.ts"
import { type ApiError, apiError, type Dialect, dialectOf, errorResponse } from "./ApiError.ts"
import type { UpstreamFailed } from "../app/ChatErrors.ts"
import { statusOfFailure } from "./FailureStatus.ts"
import { checkRequestParameters } from "./InputLimits.ts"
import type { RateLimited } from "../app/RateLimiter.ts"
import { CurrentTelemetry, newTelemetry, type RequestTelemetry } from "../app/RequestTelemetry.ts"
import { RequestMetrics } from "./Metrics.ts"
import { NOT_STORED_CODE, notStoredMessage, type ResponseNotStored } from "../app/DeliveredTurn.ts"

export class HttpSettings extends Context.Service<HttpSettings, { readonly maxBodyBytes: number }>()(
  "tollgate/http/HttpSettings"
) {}

export class RequestId extends Context.Service<RequestId, string>()("tollgate/http/RequestId") {}

/** Maps a failure to the error the client sees. Unknown tags are defects (bugs), handled by the caller. */
export const toApiError = (error: unknown): ApiError | undefined => {
  const tagged = error as { _tag?: string; reason?: string; message?: string }
  switch (tagged._tag) {
    case "ApiError":
      return error as ApiError
    case "RateLimited": {
      const limited = error as RateLimited
      return apiError(429, limited.message, {
        type: "rate_limit_error",
        code: "rate_limit_exceeded",
        headers: { "retry-after": String(limited.retryAfterSeconds) }
      })
    }
    case "StoreUnavailable":
      return apiError(503, "the ledger store is unavailable right now; nothing was charged, retry shortly", {
        code: "store_unavailable"
      })
    case "StoreRefused":
      // The edge checks what reaches storage; a value that still slipped through fails this request alone.
      return apiError(
        400,
        `the request carries a value the ledger cannot store (database error ${(error as { sqlState: string }).sqlState}); nothing was charged`,
        { code: "unstorable_value" }
      )
    case "IdempotencyConflict":
      return apiError(409, "this Idempotency-Key was already used with a different request body", {
        code: "idempotency_key_reused"
      })
    case "ModelNotFound": {
      const model = (error as { model: string }).model
      return apiError(404, `The model \`${model}\` does not exist or you do not have access to it.`, {
        code: "model_not_found",
        param: "model"
      })
    }
    case "ModelNotAllowed":
      return apiError(403, `this API key is not allowed to use the model '${(error as { model: string }).model}'`, {
        type: "permission_error",
        code: "model_not_allowed",
        param: "model"
      })
    case "InvalidChatRequest": {
      const invalid = error as { param: string | null; message: string }
      return apiError(400, invalid.param === null ? invalid.message : `${invalid.param}: ${invalid.message}`, {
        param: invalid.param,
        code: "invalid_request"
      })
    }
    case "UpstreamFailed": {
      const failed = error as UpstreamFailed
      const status = statusOfFailure(failed.reason)
      // Who refused is said by the code: the gateway's own checks never pass for the upstream's.
      const fallback =
        status === 429
          ? "rate_limit_exceeded"
          : status >= 500
            ? "upstream_error"
            : failed.origin === "gateway"
              ? "invalid_request"
              : "upstream_rejected"
      return apiError(status, failed.message, {
        code: failed.code ?? fallback,
        param: failed.param ?? null,
        ...(failed.retryAfterSeconds === undefined
          ? {}
          : { headers: { "retry-after": String(failed.retryAfterSeconds) } })
      })
    }
    case "ResponseNotFound":
      return apiError(404, `Response with id '${(error as { id: string }).id}' not found.`, {
        code: "not_found",
        param: "response_id"
      })
    case "ResponseNotStored":
      // The response was not kept (and is not billed): a client that retries gets a new one.
      return apiError(503, notStoredMessage((error as ResponseNotStored).reason), { code: NOT_STORED_CODE })
    case "ConversationNotFound":
      return apiError(404, `Conversation with id '${(error as { id: string }).id}' not found.`, {
        code: "not_found",
        param: "conversation_id"
      })
    case "ConversationItemNotFound":
      return apiError(404, `Item with id '${(error as { itemId: string }).itemId}' not found.`, {
        code: "not_found",
        param: "item_id"
      })
    case "ResponseNotCancellable":
      return apiError(400, (error as { message: string }).message, { code: "invalid_request", param: "response_id" })
    case "VideoNotFound":
      return apiError(404, `No video found with id '${(error as { id: string }).id}'.`, {
        code: "video_not_found",
        param: "id"
      })
    case "VideoNotReady": {
      const { id, status } = error as { id: string; status: string }
      return apiError(
        409,
        status === "failed"
          ? `Video '${id}' failed and has no content; see its error with GET /v1/videos/${id}.`
          : `Video '${id}' is ${status}; its content can be downloaded once its status is completed.`,
        { code: "video_not_ready" }
      )
    }
    case "VideoExpired":
      return apiError(410, `The content of video '${(error as { id: string }).id}' has expired and was deleted.`, {
        code: "video_expired"
      })
    case "ContentStoreError":
      return apiError(503, "the content store is unavailable right now; retry shortly", { code: "storage_unavailable" })
    case "KeyNotFound":
      return apiError(404, "no such API key", { code: "key_not_found" })
    case "KeyRejected": {
      const messages: Record<string, string> = {
        missing: "You didn't provide an API key. Send it as 'Authorization: Bearer sk-…'.",
        malformed: "The API key is malformed: Tollgate keys look like 'sk-' followed by 43 letters and digits.",
        unknown: "Incorrect API key provided.",
        revoked: "This API key has been revoked.",
        expired: "This API key has expired."
      }
      return apiError(401, messages[tagged.reason ?? "unknown"] ?? "Incorrect API key provided.", {
        code: tagged.reason === "missing" ? null : "invalid_api_key"
      })
    }
    case "LedgerRejected": {
      switch (tagged.reason) {
        case "AccountNotFound":
          return apiError(404, tagged.message ?? "no such account", { code: "account_not_found" })
        case "InsufficientBalance":
        case "SpendLimitExceeded":
          return apiError(402, `You exceeded your current quota: ${tagged.message}`, {
            type: "insufficient_quota",
            code: "insufficient_quota",
            headers: { "x-should-retry": "false" }
          })
        case "InvalidAmount":
          return apiError(400, tagged.message ?? "invalid amount", { code: "invalid_amount" })
        default:
          return apiError(409, tagged.message ?? "conflict", { code: "conflict" })
      }
    }
    default:
      return undefined
  }
}

export type Handler<E, R> = Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>

/** `x-tollgate-cost` (the request's charge) and `x-tollgate-balance` (the account's available balance after it). */
export const costHeaders = (cost: Micros, balance: Micros | undefined): Record<string, string> => ({
  "x-tollgate-cost": formatMicros(cost),
  ...(balance === undefined ? {} : { "x-tollgate-balance": formatMicros(balance) })
})

/** Wraps a handler: request id, error envelopes, defects → logged 500, and the request's metrics. */
export const respond = <E, R>(handler: Handler<E, R>, dialect?: Dialect, pattern?: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const started = yield* Clock.currentTimeNanos
    const telemetry = newTelemetry()
    const requestId = `req_${randomUUID().replaceAll("-", "")}`
    const path = new URL(request.url, "http://x").pathname
    const logged = (status: number) =>
      UNLOGGED_PATHS.has(path)
        ? Effect.void
        : Effect.flatMap(Clock.currentTimeNanos, (now) =>
            accessLog(requestId, request.method, pattern ?? path, status, telemetry, now - started)
          )
    // The model list speaks Anthropic to a client that sends `anthropic-version` (the Anthropic SDK always does).
    const chosen =
      dialect ??
      (path === "/v1/models" && request.headers["anthropic-version"] !== undefined ? "anthropic" : dialectOf(path))
    const response = yield* handler.pipe(
      Effect.provideService(RequestId, requestId),
      Effect.provideService(CurrentTelemetry, telemetry),
      Effect.onInterrupt(() =>
        Effect.forEach(telemetry.atEnd.splice(0), (hook) => hook, { discard: true }).pipe(
          // The client left before an answer: logged with nginx's 499 (client closed request).
          Effect.andThen(logged(499))
        )
      ),
      Effect.catchCause((cause) => {
        const failure = cause.reasons.find((r) => r._tag === "Fail")
        const mapped = failure === undefined ? undefined : toApiError(failure.error)
        if (mapped !== undefined) {
          const response = Effect.succeed(errorResponse(mapped, chosen, requestId))
          if (mapped.status < 500) return response
          // Server-side failures are logged as one structured line: an expected failure needs no stack trace, and
          // store and upstream errors carry no secret.
          const error = failure?.error as { _tag?: string; message?: string } | undefined
          return Effect.logWarning("request failed").pipe(
            Effect.annotateLogs({
              requestId,
              status: mapped.status,
              error: error?._tag ?? "unknown",
              detail: error?.message ?? mapped.message
            }),
            Effect.andThen(response)
          )
        }
        return Effect.logError("unhandled failure", cause).pipe(
          Effect.annotateLogs({ requestId }),
          Effect.as(
            errorResponse(
              apiError(500, `internal error; quote request id ${requestId} when reporting it`),
              chosen,
              requestId
            )
          )
        )
      })
    )
    const seconds = Number((yield* Clock.currentTimeNanos) - started) / 1e9
    const metrics = yield* RequestMetrics
    metrics.observe({ route: pattern ?? path, method: request.method, status: response.status, seconds, telemetry })
    // A response billed before it is sent says what it cost and what is left (a stream is billed at its end: its
    // cost comes as a closing SSE comment instead, see ChatGateway).
    const charged = telemetry.charge === undefined ? {} : costHeaders(telemetry.charge.cost, telemetry.balance)
    const finished = yield* untilResponseEnd(response, telemetry, logged(response.status))
    // `request-id` is the header the Anthropic SDK reads; `x-request-id` is everybody else's.
    return HttpServerResponse.setHeaders(finished, { "x-request-id": requestId, "request-id": requestId, ...charged })
  })

/** Probes and scrapes that would drown the access log: answered, measured, not logged. */
const UNLOGGED_PATHS = new Set(["/", "/healthz", "/readyz", "/metrics"])

/**
 * One line per request, once its response is over (a stream's end): enough to find a request from the
 * `x-request-id` a customer quotes and see what it cost. The key's id, never the key.
 */
const accessLog = (
  requestId: string,
  method: string,
  route: string,
  status: number,
  telemetry: RequestTelemetry,
  nanos: bigint
) =>
  Effect.logInfo("request").pipe(
    Effect.annotateLogs({
      requestId,
      method,
      route,
      status,
      keyId: telemetry.keyId ?? null,
      accountId: telemetry.accountId ?? null,
      model: telemetry.model ?? null,
      upstream: telemetry.upstream ?? null,
      inputTokens: telemetry.charge?.inputTokens ?? null,
      outputTokens: telemetry.charge?.outputTokens ?? null,
      cost: telemetry.charge === undefined ? null : formatMicros(telemetry.charge.cost),
      durationMs: Math.round(Number(nanos) / 1e4) / 100
    })
  )

/**
 * Runs the request's end hooks and then `logged` when its response is over: a streamed body's end (completed,
 * failed or the client gone), or now for any other body. A handler interrupted before answering runs the hooks too
 * (see `respond`).
 */
const untilResponseEnd = (
  response: HttpServerResponse.HttpServerResponse,
  telemetry: RequestTelemetry,
  logged: Effect.Effect<void>
) => {
  const end = Effect.andThen(
    Effect.suspend(() => Effect.forEach(telemetry.atEnd.splice(0), (hook) => hook, { discard: true })),
    logged
  )
  const body = response.body
  if (body._tag !== "Stream") return Effect.as(end, response)
  return Effect.succeed(
    HttpServerResponse.setBody(
      response,
      HttpBody.stream(Stream.ensuring(body.stream, end), body.contentType, body.contentLength)
    )
  )
}

/**
 * Adds a route whose path and query parameters are checked (InputLimits.ts) before its handler runs. Under `/admin`
 * the handler checks them itself, after the admin token (`admin` in AdminApi.ts): every admin path asks for the token
 * first, so nothing about it is answered to a caller without one.
 */
export const route = <E, R>(
  method: "GET" | "POST" | "DELETE" | "PUT" | "PATCH" | "OPTIONS" | "*",
  path: HttpRouter.PathInput,
  handler: Handler<E, R>,
  dialect?: Dialect
) =>
  HttpRouter.add(
    method,
    path,
    respond(
      String(path).startsWith("/admin") ? handler : Effect.andThen(checkRequestParameters, handler),
      dialect,
      String(path)
    )
  )

export const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })

export const money = formatMicros

export const routes = (...layers: ReadonlyArray<Layer.Layer<never, never, HttpRouter.HttpRouter>>) =>
  Layer.mergeAll(...(layers as [Layer.Layer<never, never, HttpRouter.HttpRouter>]))
