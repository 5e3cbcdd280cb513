/**
 * One admin API call whose answer the CLI prints as sent (CSV, JSON it only displays, long-running reports), so it
 * does not go through the typed AdminClient: the body text of a 2xx, or the CLI's usual errors. The budget is long
 * because replay and audit verification of a long history take minutes on the server.
 */
import { Duration, Effect, Option, Redacted, Result } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { loadAdminCredentials } from "./AdminToken.ts"
import { AdminRequestRejected, AdminTokenRefused, ServerUnreachable, UnexpectedResponse } from "./CliErrors.ts"
import { ServerUrl } from "./CliSettings.ts"
import { errorEnvelope, parseJson, readBody, unreachable } from "./JsonCall.ts"

export interface AdminRequestOptions {
  readonly method?: "GET" | "POST"
  readonly urlParams?: Record<string, string>
  readonly accept?: string
  /** No limit when undefined (a replay that reports its progress); 5 minutes when not given. */
  readonly timeout?: Duration.Duration | undefined
}

/** A 2xx response whose body is still unread, or the CLI's usual errors (a refusal's body read for its message). */
export const adminResponse = Effect.fn("adminResponse")(function* (path: string, options: AdminRequestOptions = {}) {
  const url = yield* ServerUrl
  const credentials = yield* loadAdminCredentials
  const client = yield* HttpClient.HttpClient
  const base = HttpClientRequest.make(options.method ?? "GET")(`${url}${path}`, {
    headers: { accept: options.accept ?? "application/json" },
    ...(options.urlParams === undefined ? {} : { urlParams: options.urlParams })
  }).pipe(HttpClientRequest.bearerToken(Redacted.value(credentials.token)))
  const request = options.method === "POST" ? HttpClientRequest.bodyJsonUnsafe(base, {}) : base
  const timeout = "timeout" in options ? options.timeout : Duration.minutes(5)
  const sent = client.execute(request).pipe(Effect.mapError((error) => unreachable(url, error)))
  const response = yield* timeout === undefined
    ? sent
    : sent.pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () =>
            Effect.fail(new ServerUnreachable({ url, reason: `no answer within ${Duration.format(timeout)}` }))
        })
      )
  if (response.status < 400) return response
  if (response.status === 401) return yield* new AdminTokenRefused({ tokenFile: credentials.tokenFile })
  const text = yield* readBody(url, response)
  const envelope = errorEnvelope(text)
  if (Option.isSome(envelope)) {
    const { message, code } = envelope.value
    return yield* new AdminRequestRejected({ status: response.status, serverMessage: message, code })
  }
  return yield* new UnexpectedResponse({ url, status: response.status, detail: text.trim().slice(0, 120) })
})

/** The body text of a 2xx admin answer, or the CLI's usual errors. */
export const adminRequest = (path: string, options: AdminRequestOptions = {}) =>
  Effect.gen(function* () {
    const response = yield* adminResponse(path, options)
    return yield* readBody(yield* ServerUrl, response)
  })

/** The JSON body of an admin answer, or UnexpectedResponse when it is not JSON. */
export const adminJson = (path: string, options: AdminRequestOptions = {}) =>
  Effect.gen(function* () {
    const text = yield* adminRequest(path, options)
    const parsed = parseJson(text)
    if (Result.isFailure(parsed)) {
      return yield* new UnexpectedResponse({ url: yield* ServerUrl, status: 200, detail: "the body is not JSON" })
    }
    return { text, body: parsed.success }
  })
