/**
 * One error value for every public protocol, rendered in the envelope of the protocol that was called:
 * OpenAI `{"error":{"message","type","param","code"}}` on `/v1/*` and `/admin/*`, Anthropic
 * `{"type":"error","error":{"type","message"}}` on `/v1/messages`, Google `{"error":{"code","message","status"}}`
 * on `/v1beta/*`. Statuses and types follow each vendor's published error
 * reference (OpenAI, Anthropic, Gemini).
 */
import { Data } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Dialect } from "@tollgate/plugin-spec"

/** The protocol a request came in on: it picks the error envelope. One type with the plugin spec's. */
export type { Dialect }

export interface ApiErrorOptions {
  /** OpenAI `type`; defaults from the status. */
  readonly type?: string
  readonly code?: string | null
  readonly param?: string | null
  readonly headers?: Record<string, string>
}

export class ApiError extends Data.TaggedError("ApiError")<{
  readonly status: number
  readonly message: string
  readonly options: ApiErrorOptions
}> {}

export const apiError = (status: number, message: string, options: ApiErrorOptions = {}): ApiError =>
  new ApiError({ status, message, options })

const openAiType = (status: number): string => {
  if (status === 401) return "invalid_request_error"
  if (status === 402) return "insufficient_quota"
  if (status === 403) return "permission_error"
  if (status === 429) return "rate_limit_error"
  if (status === 503) return "service_unavailable_error"
  if (status >= 500) return "server_error"
  return "invalid_request_error"
}

export const anthropicType = (status: number): string => {
  switch (status) {
    case 401:
      return "authentication_error"
    case 402:
      return "billing_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    case 413:
      return "request_too_large"
    case 429:
      return "rate_limit_error"
    case 503:
    case 529:
      return "overloaded_error"
    case 504:
      return "timeout_error"
    default:
      return status >= 500 ? "api_error" : "invalid_request_error"
  }
}

const googleStatus = (status: number): string => {
  switch (status) {
    case 400:
    case 413:
      return "INVALID_ARGUMENT"
    case 401:
      return "UNAUTHENTICATED"
    case 402:
    case 429:
      return "RESOURCE_EXHAUSTED"
    case 403:
      return "PERMISSION_DENIED"
    case 404:
      return "NOT_FOUND"
    case 409:
      return "ABORTED"
    case 503:
      return "UNAVAILABLE"
    case 504:
      return "DEADLINE_EXCEEDED"
    default:
      return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"
  }
}

export const errorBody = (error: ApiError, dialect: Dialect, requestId: string): unknown => {
  switch (dialect) {
    case "openai":
      return {
        error: {
          message: error.message,
          type: error.options.type ?? openAiType(error.status),
          param: error.options.param ?? null,
          code: error.options.code ?? null
        }
      }
    case "anthropic":
      return {
        type: "error",
        error: { type: anthropicType(error.status), message: error.message },
        request_id: requestId
      }
    case "gemini": {
      // Google says which field and why in `details`: a BadRequest's field violations, an ErrorInfo's reason.
      const { param, code } = error.options
      const details = [
        ...(code === undefined || code === null
          ? []
          : [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: code.toUpperCase(), domain: "tollgate" }]),
        ...(param === undefined || param === null
          ? []
          : [
              {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                fieldViolations: [{ field: param, description: error.message }]
              }
            ])
      ]
      return {
        error: {
          code: error.status,
          message: error.message,
          status: googleStatus(error.status),
          ...(details.length === 0 ? {} : { details })
        }
      }
    }
  }
}

export const errorResponse = (error: ApiError, dialect: Dialect, requestId: string) =>
  HttpServerResponse.jsonUnsafe(errorBody(error, dialect, requestId), {
    status: error.status,
    headers: error.options.headers ?? {}
  })

/** Picks the envelope from the path: the protocol that was called decides how its errors look. */
export const dialectOf = (path: string): Dialect => {
  // Also the native path sent without `/v1beta` or under `/v1`, so its 404 is one a Google client can read.
  if (path.startsWith("/v1beta/") || /^(\/v1)?\/models\/[^/]+:[A-Za-z]+$/.test(path)) return "gemini"
  // Also the doubled `/v1/v1/messages` of a misconfigured Anthropic client, or `/messages` without its `/v1`.
  if (/^(\/v1){0,2}\/messages(\/|$)/.test(path)) return "anthropic"
  return "openai"
}

export const badRequest = (message: string, param: string | null = null, code: string | null = null) =>
  apiError(400, message, { param, code })
export const notFound = (message: string, code: string | null = null) => apiError(404, message, { code })
