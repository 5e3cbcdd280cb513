/**
 * What the CLI's HTTP clients share: sending a request with a bearer credential, turning transport failures into
 * ServerUnreachable, reading the body, reading the server's error envelope and decoding a JSON answer with a Schema.
 * Each client keeps its own errors for a refused credential or request (`rejection`).
 */
import { Duration, Effect, Option, Redacted, Result, Schema } from "effect"
import { type HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { HttpMethod } from "effect/http/HttpMethod"
import { ErrorEnvelope } from "./AdminApi.ts"
import { ServerUnreachable, UnexpectedResponse } from "./CliErrors.ts"

export interface JsonAnswer<A> {
  readonly status: number
  /** The body exactly as the server sent it, parsed but not decoded (what `--json` prints). */
  readonly body: unknown
  readonly value: A
}

// A CLI call that hangs is worse than one that fails: the server answers these calls in milliseconds.
const requestTimeout = Duration.seconds(30)

const networkReasons: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  UND_ERR_SOCKET: "connection closed by the server",
  CERT_HAS_EXPIRED: "TLS certificate expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "self-signed TLS certificate"
}

/** fetch hides the socket error a few `cause`s deep (and in `errors` when several addresses were tried). */
export const describeNetworkFailure = (cause: unknown): string => {
  const seen = new Set<unknown>()
  const queue: Array<unknown> = [cause]
  let fallback: string | undefined
  while (queue.length > 0) {
    const current = queue.shift()
    if (typeof current !== "object" || current === null || seen.has(current)) continue
    seen.add(current)
    const { code, message, errors } = current as { code?: unknown; message?: unknown; errors?: unknown }
    if (typeof code === "string") return networkReasons[code] ?? code
    if (fallback === undefined && typeof message === "string" && message !== "" && message !== "fetch failed") {
      fallback = message
    }
    queue.push((current as { cause?: unknown }).cause)
    if (Array.isArray(errors)) queue.push(...errors)
  }
  return fallback ?? "the connection failed"
}

/** A transport failure as ServerUnreachable, with the socket error's reason. */
export const unreachable = (url: string, error: HttpClientError.HttpClientError) =>
  new ServerUnreachable({ url, reason: describeNetworkFailure(error.reason.cause ?? error) })

/** The body text of an answer; a connection lost while reading it is ServerUnreachable. */
export const readBody = (url: string, response: HttpClientResponse.HttpClientResponse) =>
  response.text.pipe(Effect.mapError((error) => unreachable(url, error)))

export const parseJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

const firstLine = (text: string) => {
  const line = text.trim().split("\n", 1)[0] ?? ""
  return line.length > 120 ? `${line.slice(0, 117)}...` : line
}

/** What the server's error envelope says, when the body is one. */
export interface ServerRefusal {
  readonly message: string
  readonly code: string | null
}

/** The message and code of the error envelope in `text`, or none when the body is not one. */
export const errorEnvelope = (text: string): Option.Option<ServerRefusal> => {
  const parsed = parseJson(text)
  const envelope = Result.isSuccess(parsed) ? Schema.decodeUnknownOption(ErrorEnvelope)(parsed.success) : Option.none()
  return Option.map(envelope, ({ error }) => ({ message: error.message, code: error.code ?? null }))
}

/** An error answer as the user should read it: `refused` of the envelope when there is one, else UnexpectedResponse. */
export const rejection = <E>(
  url: string,
  status: number,
  text: string,
  refused: (refusal: ServerRefusal) => E
): E | UnexpectedResponse =>
  Option.match(errorEnvelope(text), {
    onNone: () =>
      new UnexpectedResponse({ url, status, detail: text.trim() === "" ? "empty error body" : firstLine(text) }),
    onSome: refused
  })

export interface JsonCallOptions {
  readonly body?: unknown
  readonly urlParams?: Record<string, string>
}

/**
 * `send` and `call` for one server and credential. `rejected` turns an error answer (status ≥ 400, body read) into
 * the client's own error; `name` names the span of each call.
 */
export const makeJsonCall = <E>(options: {
  readonly name: string
  readonly client: HttpClient.HttpClient
  readonly url: string
  readonly credential: Redacted.Redacted<string>
  readonly rejected: (status: number, text: string) => E
}) => {
  const { client, url, credential, rejected } = options

  /** Sends `request` with the credential; an invalid URL or a transport failure is ServerUnreachable. */
  const send = (request: HttpClientRequest.HttpClientRequest) =>
    client
      .execute(request.pipe(HttpClientRequest.bearerToken(Redacted.value(credential))))
      .pipe(
        Effect.mapError((error) =>
          error.reason._tag === "InvalidUrlError"
            ? new ServerUnreachable({ url, reason: `"${url}" is not a valid URL` })
            : unreachable(url, error)
        )
      )

  /** One JSON call: the answer decoded with `schema`, or the client's errors; it fails when the server hangs. */
  const call = Effect.fn(options.name)(
    function* <A>(
      schema: Schema.Decoder<A>,
      method: HttpMethod,
      path: string,
      options: JsonCallOptions = {}
    ): Effect.fn.Return<JsonAnswer<A>, ServerUnreachable | UnexpectedResponse | E> {
      yield* Effect.annotateCurrentSpan({ method, path })
      let request = HttpClientRequest.make(method)(`${url}${path}`, {
        acceptJson: true,
        ...(options.urlParams === undefined ? {} : { urlParams: options.urlParams })
      })
      if (options.body !== undefined) request = HttpClientRequest.bodyJsonUnsafe(request, options.body)
      const response = yield* send(request)
      const text = yield* readBody(url, response)
      const status = response.status
      if (status >= 400) return yield* Effect.fail(rejected(status, text))
      const parsed = parseJson(text)
      if (Result.isFailure(parsed)) {
        return yield* new UnexpectedResponse({ url, status, detail: "the body is not JSON" })
      }
      const decoded = Schema.decodeUnknownResult(schema)(parsed.success)
      if (Result.isFailure(decoded)) {
        return yield* new UnexpectedResponse({ url, status, detail: firstLine(decoded.failure.message) })
      }
      return { status, body: parsed.success, value: decoded.success }
    },
    Effect.timeoutOrElse({
      duration: requestTimeout,
      orElse: () =>
        Effect.fail(new ServerUnreachable({ url, reason: `no answer within ${Duration.format(requestTimeout)}` }))
    })
  )

  return { send, call }
}
