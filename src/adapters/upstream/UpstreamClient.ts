/**
 * HTTP calls to upstream vendors over one keep-alive undici `Pool` per origin. The per-request path stays thin (no
 * Effect HttpClient, no per-chunk Effect Stream): measured, those cost most of the throughput of a pass-through
 * (bench/README.md has the pass-through benchmarks). Effect is kept for the service, the errors and interruption: interrupting `request`, or
 * an Effect reading its body, aborts the upstream request and destroys its socket.
 */
import { noteUpstream } from "../../app/RequestTelemetry.ts"
import { Clock, Context, Effect, Layer } from "effect"
import type { Dispatcher, Pool } from "undici"
import { loadUndici, type Undici, undiciNow } from "./LazyUndici.ts"
import { discard, ResponseBody } from "./ResponseBody.ts"
import {
  credentialHeaders,
  credentialQuery,
  protocolHeaders,
  type UpstreamTarget,
  upstreamKey,
  withCredentialQuery
} from "./UpstreamEndpoints.ts"
import {
  HttpStatus,
  isRequestDefect,
  isRetryableStatus,
  parseRetryAfter,
  reasonFromCause,
  truncateErrorBody,
  UpstreamError
} from "./UpstreamError.ts"
import { traced } from "../../app/Traced.ts"

export interface UpstreamRequest {
  readonly upstream: UpstreamTarget
  readonly method: Dispatcher.HttpMethod
  /** Appended to the base URL's path, query included: `/chat/completions`, `/v1/messages`, `…:streamGenerateContent?alt=sse`. */
  readonly path: string
  /** Lower-case names. Credentials are added by the client and must not be passed here. */
  readonly headers?: Readonly<Record<string, string>>
  /** Sent as is; `content-type: application/json` is assumed unless `headers` says otherwise. */
  readonly body?: Uint8Array | string
  /** Overrides the upstream's wait for response headers. */
  readonly timeoutMs?: number
  /** Overrides the upstream's longest silence inside the body. */
  readonly idleTimeoutMs?: number
  /** Aborts the request, and later its body, when fired. */
  readonly signal?: AbortSignal
}

/** A 2xx response; other statuses fail with an `HttpStatus` reason. The body must be read or cancelled. */
export interface UpstreamResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: ResponseBody
}

/** Bytes of an error body read before it is cut off; the rest is discarded with the connection. */
const ERROR_BODY_BYTES = 16 * 1024

/** A stuck `Pool.close()` must not hold up shutdown for longer than this. */
const POOL_CLOSE_GRACE = "5 seconds"

/** What a request needs from its upstream, computed once per upstream. */
interface Target {
  readonly pool: Pool
  readonly basePath: string
  readonly defaults: Readonly<Record<string, string>>
  readonly defaultsWithBody: Readonly<Record<string, string>>
  readonly credentials: Readonly<Record<string, string>>
  /** The key as a query parameter, for an upstream whose `auth` says so; "" otherwise. */
  readonly query: string
}

export class UpstreamClient extends Context.Service<
  UpstreamClient,
  {
    /** Sends a request; fails with `UpstreamError` on connection failures, timeouts and non-2xx statuses. */
    request(request: UpstreamRequest): Effect.Effect<UpstreamResponse, UpstreamError>
  }
>()("tollgate/adapters/upstream/UpstreamClient") {
  /** Pools are opened on first use and closed (then destroyed, if requests linger) when the layer's scope closes. */
  static readonly layer: Layer.Layer<UpstreamClient> = Layer.effect(
    UpstreamClient,
    Effect.gen(function* () {
      const pools = new Map<string, Pool>()
      const targets = new WeakMap<UpstreamTarget, Target>()
      yield* Effect.addFinalizer(() => closePools(pools))

      const target = (undici: Undici, upstream: UpstreamTarget): Target => {
        const known = targets.get(upstream)
        if (known !== undefined) return known
        const url = new URL(upstream.baseUrl)
        let pool = pools.get(url.origin)
        if (pool === undefined) {
          pool = new undici.Pool(url.origin, {
            connections: upstream.maxConnections,
            keepAliveTimeout: 60_000,
            connect: { timeout: 10_000 }
          })
          pools.set(url.origin, pool)
        }
        const made: Target = {
          pool,
          basePath: url.pathname.replace(/\/+$/, ""),
          defaults: protocolHeaders(upstream),
          defaultsWithBody: { "content-type": "application/json", ...protocolHeaders(upstream) },
          credentials: credentialHeaders(upstream),
          query: credentialQuery(upstream)
        }
        targets.set(upstream, made)
        return made
      }

      const request = Effect.fnUntraced(function* (request: UpstreamRequest) {
        const { upstream } = request
        const undici = undiciNow() ?? (yield* loadUndici)
        const { pool, basePath, defaults, defaultsWithBody, credentials, query } = target(undici, upstream)
        const timeouts = {
          headersMs: request.timeoutMs ?? upstream.timeoutMs,
          idleMs: request.idleTimeoutMs ?? upstream.idleTimeoutMs
        }
        const failure = (cause: unknown) => reasonFromCause(cause, timeouts)
        const sent = yield* Clock.currentTimeNanos
        const response = yield* Effect.callback<Dispatcher.ResponseData, UpstreamError>((resume) => {
          // One controller per call, fired by an interruption (the canceller below) or by the caller's signal: cheaper
          // than Effect's own per-callback signal combined with the caller's through `AbortSignal.any`.
          const controller = new AbortController()
          const signal = controller.signal
          const abort = () => controller.abort()
          if (request.signal?.aborted === true) abort()
          else request.signal?.addEventListener("abort", abort, { once: true })
          pool
            .request({
              method: request.method,
              path: withCredentialQuery(basePath + request.path, query),
              headers: {
                ...(request.body === undefined ? defaults : defaultsWithBody),
                ...request.headers,
                ...credentials
              },
              body: request.body,
              signal,
              headersTimeout: timeouts.headersMs,
              bodyTimeout: timeouts.idleMs
            })
            .then(
              (data) => {
                // Headers can land in the same tick as an interruption; nobody will read this body then.
                if (signal.aborted) discard(data.body)
                else resume(Effect.succeed(data))
              },
              (cause) =>
                resume(
                  isRequestDefect(cause)
                    ? Effect.die(cause)
                    : Effect.fail(new UpstreamError({ upstream: upstream.name, reason: failure(cause) }))
                )
            )
          return Effect.sync(abort)
        })
        // The upstream's share of the request, for the metrics: the wait for its answer to start.
        const answered = response.statusCode >= 200 && response.statusCode < 300
        yield* noteUpstream(upstream.name, Number((yield* Clock.currentTimeNanos) - sent) / 1e9, answered)
        const body = new ResponseBody(response.body, upstream.name, failure)
        if (answered) {
          return { status: response.statusCode, headers: response.headers, body } satisfies UpstreamResponse
        }
        const key = upstreamKey(upstream)
        const raw = yield* body.prefixText(ERROR_BODY_BYTES)
        // Some vendors quote the key they rejected; the body ends up in logs, so it must not carry it.
        const text = key === "" ? raw : raw.replaceAll(key, "<redacted>")
        const now = yield* Clock.currentTimeMillis
        return yield* new UpstreamError({
          upstream: upstream.name,
          reason: new HttpStatus({
            status: response.statusCode,
            retryAfter: parseRetryAfter(response.headers, now),
            body: truncateErrorBody(text),
            isRetryable: response.statusCode >= 400 && isRetryableStatus(response.statusCode, response.headers, text)
          })
        })
      }, traced("UpstreamClient.request"))

      return UpstreamClient.of({ request })
    })
  )
}

const closePools = (pools: ReadonlyMap<string, Pool>): Effect.Effect<void> =>
  Effect.forEach(
    pools.values(),
    (pool) =>
      Effect.tryPromise(() => pool.close()).pipe(
        Effect.timeoutOrElse({
          duration: POOL_CLOSE_GRACE,
          orElse: () => Effect.tryPromise(() => pool.destroy())
        }),
        Effect.ignore
      ),
    { concurrency: "unbounded", discard: true }
  )
