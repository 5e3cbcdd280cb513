/** Each vendor's error body, with the types and status words the real APIs use for each HTTP status. */
import type { Dialect } from "./SimResponse.ts"

const openAIType = (status: number): string => {
  if (status === 429) return "requests"
  if (status >= 500) return status === 503 ? "service_unavailable_error" : "server_error"
  return "invalid_request_error"
}

const openAICode = (status: number): string | null => {
  if (status === 401) return "invalid_api_key"
  if (status === 404) return "model_not_found"
  if (status === 429) return "rate_limit_exceeded"
  return null
}

export const openAIError = (
  status: number,
  message: string,
  extra: { readonly type?: string; readonly param?: string | null; readonly code?: string | null } = {}
): unknown => ({
  error: {
    message,
    type: extra.type ?? openAIType(status),
    param: extra.param ?? null,
    code: extra.code === undefined ? openAICode(status) : extra.code
  }
})

const anthropicTypes: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error"
}

export const anthropicErrorType = (status: number): string =>
  anthropicTypes[status] ?? (status >= 500 ? "api_error" : "invalid_request_error")

export const anthropicError = (status: number, message: string, requestId: string): unknown => ({
  type: "error",
  error: { type: anthropicErrorType(status), message },
  request_id: requestId
})

const geminiStatuses: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

export const geminiError = (status: number, message: string, details?: ReadonlyArray<unknown>): unknown => ({
  error: {
    code: status,
    message,
    status: geminiStatuses[status] ?? (status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT"),
    ...(details === undefined ? {} : { details })
  }
})

const defaultMessages: Readonly<Record<number, string>> = {
  400: "Bad request (simulated).",
  401: "Unauthorized (simulated).",
  403: "Forbidden (simulated).",
  404: "Not found (simulated).",
  429: "Rate limit reached (simulated). Please try again later.",
  500: "The server had an error while processing your request (simulated).",
  502: "Bad gateway (simulated).",
  503: "The service is temporarily unavailable (simulated).",
  504: "Timeout (simulated).",
  529: "Overloaded"
}

/** The body of a forced error status in the given dialect. */
export const forcedError = (dialect: Dialect, status: number, requestId: string): unknown => {
  const message = defaultMessages[status] ?? `Simulated error ${status}.`
  switch (dialect) {
    case "openai":
      return openAIError(status, message)
    case "anthropic":
      return anthropicError(status, message, requestId)
    case "gemini":
      return geminiError(status, message)
  }
}
