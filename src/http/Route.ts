/**
 * How every route answers: a request id on every response (`x-request-id`), and every failure — ours, the ledger's,
 * the store's — rendered as an ApiError in the envelope of the protocol that was called. Defects become a 500 in
 * that envelope with the request id, logged with their cause; nothing internal is echoed to the client.
 */
import { Clock, Context, Effect, Layer, Stream } from "effect"
import { HttpBody, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomUUID } from "node:crypto"
import { formatMicros, type Micros } from "../domain/Money.ts"
import { apiError, type Dialect, dialectOf, errorResponse } from "./ApiError.ts"
import { toApiError } from "./ErrorRules.ts"
import { checkRequestParameters } from "./InputLimits.ts"
import { CurrentTelemetry, newTelemetry, type RequestTelemetry } from "../app/RequestTelemetry.ts"
import { RequestMetrics } from "./Metrics.ts"

export class HttpSettings extends Context.Service<HttpSettings, { readonly maxBodyBytes: number }>()(
  "tollgate/http/HttpSettings"
) {}

export class RequestId extends Context.Service<RequestId, string>()("tollgate/http/RequestId") {}

export type Handler<E, R> = Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>

/** What the gateway left out of a request it served (a hosted tool the model's upstream does not run), `; `-separated. */
export const WARNING_HEADER = "x-tollgate-warning"

/** A note may quote the client's own words: only printable ASCII goes in a header, and not too much of it. */
const headerText = (text: string): string => text.replace(/[^\x20-\x7e]/g, "?").slice(0, 2000)

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
    // cost comes in HTTP trailers instead, see StreamedReply.ts).
    const charged = telemetry.charge === undefined ? {} : costHeaders(telemetry.charge.cost, telemetry.balance)
    const finished = yield* untilResponseEnd(response, telemetry, logged(response.status))
    // `request-id` is the header the Anthropic SDK reads; `x-request-id` is everybody else's.
    const warned =
      telemetry.warnings.length === 0 ? {} : { [WARNING_HEADER]: headerText(telemetry.warnings.join("; ")) }
    return HttpServerResponse.setHeaders(finished, {
      "x-request-id": requestId,
      "request-id": requestId,
      ...charged,
      ...warned
    })
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
