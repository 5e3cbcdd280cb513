/**
 * What can go wrong calling an upstream, as one error with a tagged `reason`. Messages carry status codes, error codes
 * and the vendor's error body, never request headers, so an API key cannot reach a log through them.
 */
import { Schema } from "effect"

/** No connection could be made: refused, DNS failure, TLS failure, connect timeout. Nothing reached the upstream. */
export class ConnectFailed extends Schema.TaggedError<ConnectFailed>()("ConnectFailed", {
  code: Schema.String,
  detail: Schema.String
}) {
  get isRetryable(): boolean {
    return true
  }
  override get message(): string {
    return `cannot connect (${this.code}): ${this.detail}`
  }
}

/** The connection broke after the request was sent: reset, closed early, truncated body. */
export class ConnectionLost extends Schema.TaggedError<ConnectionLost>()("ConnectionLost", {
  code: Schema.String,
  detail: Schema.String
}) {
  get isRetryable(): boolean {
    return true
  }
  override get message(): string {
    return `connection lost (${this.code}): ${this.detail}`
  }
}

/** No response headers in time (`headers`), or a body that went silent (`body`). */
export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", {
  phase: Schema.Literals(["headers", "body"]),
  timeoutMs: Schema.Number
}) {
  /** Only a wait for headers is safe to retry: once a body has started, part of the answer may have been relayed. */
  get isRetryable(): boolean {
    return this.phase === "headers"
  }
  override get message(): string {
    return this.phase === "headers"
      ? `no response headers within ${this.timeoutMs} ms`
      : `response body idle for ${this.timeoutMs} ms`
  }
}

/** The upstream answered with a 4xx or 5xx status. */
export class HttpStatus extends Schema.TaggedError<HttpStatus>()("HttpStatus", {
  status: Schema.Number,
  /** Seconds to wait, from `retry-after-ms` or `retry-after`. */
  retryAfter: Schema.optional(Schema.Number),
  /** The vendor's error body, truncated. */
  body: Schema.String,
  isRetryable: Schema.Boolean
}) {
  override get message(): string {
    return `HTTP ${this.status}${this.body === "" ? "" : `: ${this.body}`}`
  }
}

/** The body is not what the protocol promises (invalid JSON, an SSE stream past its buffer limit). */
export class Malformed extends Schema.TaggedError<Malformed>()("Malformed", {
  detail: Schema.String
}) {
  get isRetryable(): boolean {
    return false
  }
  override get message(): string {
    return `malformed response: ${this.detail}`
  }
}

/** The caller gave up: the fiber was interrupted, its signal fired, or it cancelled the body. */
export class Aborted extends Schema.TaggedError<Aborted>()("Aborted", {}) {
  get isRetryable(): boolean {
    return false
  }
  override get message(): string {
    return "request aborted"
  }
}

export const UpstreamErrorReason = Schema.Union([
  ConnectFailed,
  ConnectionLost,
  Timeout,
  HttpStatus,
  Malformed,
  Aborted
])

export type UpstreamErrorReason = typeof UpstreamErrorReason.Type

export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", {
  /** The upstream's name in the operator config. */
  upstream: Schema.String,
  reason: UpstreamErrorReason
}) {
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
  override get message(): string {
    return `upstream ${this.upstream}: ${this.reason.message}`
  }
}

/** Longest vendor error body kept on an {@link HttpStatus}, in characters. */
export const ERROR_BODY_LIMIT = 4_096

/**
 * Seconds to wait before retrying, from `retry-after-ms` (OpenAI and Anthropic SDKs) or `retry-after` (seconds or an
 * HTTP date); undefined when absent or unreadable.
 */
export const parseRetryAfter = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  nowMillis: number
): number | undefined => {
  const millis = Number(firstHeader(headers, "retry-after-ms"))
  if (firstHeader(headers, "retry-after-ms") !== undefined && Number.isFinite(millis) && millis >= 0) {
    return millis / 1000
  }
  const value = firstHeader(headers, "retry-after")?.trim()
  if (value === undefined || value === "") return undefined
  if (/^[0-9]+(\.[0-9]+)?$/.test(value)) return Number(value)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - nowMillis) / 1000))
}

/**
 * Whether a failed status is worth retrying: 429 and 5xx (so Anthropic's 529), unless the upstream says otherwise with
 * `x-should-retry`, or the 429 is OpenAI's exhausted quota, which waiting does not fix.
 */
export const isRetryableStatus = (
  status: number,
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  body: string
): boolean => {
  const shouldRetry = firstHeader(headers, "x-should-retry")
  if (shouldRetry === "true") return true
  if (shouldRetry === "false") return false
  if (status === 429) return !body.includes('"insufficient_quota"')
  return status >= 500
}

export const firstHeader = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  name: string
): string | undefined => {
  const value = headers[name]
  return typeof value === "string" ? value : value?.[0]
}

/** Truncates a vendor error body to {@link ERROR_BODY_LIMIT} characters. */
export const truncateErrorBody = (text: string): string =>
  text.length <= ERROR_BODY_LIMIT ? text : `${text.slice(0, ERROR_BODY_LIMIT)}…`

const CONNECT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_FAIL",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT"
])

const ABORT_CODES = new Set(["UND_ERR_ABORTED", "ABORT_ERR"])

/** Programming errors in how a request was built: these are bugs (defects), not upstream failures. */
const DEFECT_CODES = new Set(["UND_ERR_INVALID_ARG", "UND_ERR_NOT_SUPPORTED", "ERR_INVALID_ARG_TYPE"])

/** Whether undici rejected the request as built (a bad header value, an unsupported option): a bug, not an outage. */
export const isRequestDefect = (cause: unknown): boolean => DEFECT_CODES.has(errorCode(cause))

/** Classifies an error thrown by undici or node:net while a request or its body was in flight. */
export const reasonFromCause = (
  cause: unknown,
  timeouts: { readonly headersMs: number; readonly idleMs: number }
): UpstreamErrorReason => {
  if (cause instanceof UpstreamError) return cause.reason
  const code = errorCode(cause)
  if (code === "UND_ERR_HEADERS_TIMEOUT") return new Timeout({ phase: "headers", timeoutMs: timeouts.headersMs })
  if (code === "UND_ERR_BODY_TIMEOUT") return new Timeout({ phase: "body", timeoutMs: timeouts.idleMs })
  if (ABORT_CODES.has(code) || (cause instanceof Error && cause.name === "AbortError")) return new Aborted()
  const detail = errorDetail(cause)
  if (CONNECT_CODES.has(code) || /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_)|SELF_SIGNED/.test(code)) {
    return new ConnectFailed({ code, detail })
  }
  return new ConnectionLost({ code: code === "" ? "UNKNOWN" : code, detail })
}

const errorCode = (cause: unknown): string => {
  if (typeof cause !== "object" || cause === null) return ""
  const code = (cause as { readonly code?: unknown }).code
  if (typeof code === "string") return code
  // Node's happy-eyeballs connect reports one error per address tried.
  const errors = (cause as { readonly errors?: unknown }).errors
  return Array.isArray(errors) && errors.length > 0 ? errorCode(errors[0]) : ""
}

const errorDetail = (cause: unknown): string => {
  const errors = cause instanceof AggregateError ? cause.errors : []
  const message =
    cause instanceof Error
      ? cause.message || errors.map((error) => (error instanceof Error ? error.message : String(error))).join("; ")
      : String(cause)
  return message.length <= 300 ? message : `${message.slice(0, 300)}…`
}
