/**
 * The admin API as the CLI calls it: one method per endpoint, each answering the decoded value together with the raw
 * JSON body (what `--json` prints). Transport and HTTP failures become the user-facing errors of `CliErrors.ts`.
 */
import { Context, Duration, Effect, Layer, Option, Redacted, Result, Schema } from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { HttpMethod } from "effect/http/HttpMethod"
import {
  AccountCreated,
  AccountDetails,
  AccountList,
  DepositRecorded,
  ErrorEnvelope,
  KeyCreated,
  KeyList,
  type KeyRequest,
  KeyRevoked,
  LedgerPage,
  type LedgerQuery,
  ReplayReport
} from "./AdminApi.ts"
import { type AdminCredentials, loadAdminCredentials } from "./AdminToken.ts"
import { AdminRequestRejected, AdminTokenRefused, ServerUnreachable, UnexpectedResponse } from "./CliErrors.ts"
import { ServerUrl } from "./CliSettings.ts"

export interface AdminAnswer<A> {
  readonly status: number
  /** The body exactly as the server sent it, parsed but not decoded. */
  readonly body: unknown
  readonly value: A
}

export type AdminCallError = ServerUnreachable | AdminTokenRefused | AdminRequestRejected | UnexpectedResponse

type Call<A> = Effect.Effect<AdminAnswer<A>, AdminCallError>

export interface AdminClientShape {
  readonly url: string
  readonly createAccount: (name: string) => Call<AccountCreated>
  readonly listAccounts: Call<AccountList>
  readonly showAccount: (accountId: string) => Call<AccountDetails>
  readonly deposit: (
    accountId: string,
    deposit: { readonly amount: string; readonly reference: string }
  ) => Call<DepositRecorded>
  readonly createKey: (accountId: string, key: KeyRequest) => Call<KeyCreated>
  readonly listKeys: (accountId: string) => Call<KeyList>
  readonly revokeKey: (keyId: string) => Call<KeyRevoked>
  readonly ledgerPage: (accountId: string, query: LedgerQuery) => Call<LedgerPage>
  readonly replay: Call<ReplayReport>
}

// A CLI call that hangs is worse than one that fails: the server answers admin calls in milliseconds.
const requestTimeout = Duration.seconds(30)

const segment = encodeURIComponent

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

const parseJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

const firstLine = (text: string) => {
  const line = text.trim().split("\n", 1)[0] ?? ""
  return line.length > 120 ? `${line.slice(0, 117)}...` : line
}

/** The client for one server and token; `layer` builds it from the command line and the environment. */
export const makeAdminClient = (options: { readonly url: string; readonly credentials: AdminCredentials }) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const { url, credentials } = options

    const unreachable = (reason: string) => new ServerUnreachable({ url, reason })

    const readBody = (response: HttpClientResponse.HttpClientResponse) =>
      response.text.pipe(Effect.mapError((error) => unreachable(describeNetworkFailure(error.reason.cause ?? error))))

    const call = Effect.fn("AdminClient.call")(
      function* <A>(
        schema: Schema.Decoder<A>,
        method: HttpMethod,
        path: string,
        options: { readonly body?: unknown; readonly urlParams?: Record<string, string> } = {}
      ): Effect.fn.Return<AdminAnswer<A>, AdminCallError> {
        yield* Effect.annotateCurrentSpan({ method, path })
        let request = HttpClientRequest.make(method)(`${url}${path}`, {
          acceptJson: true,
          ...(options.urlParams === undefined ? {} : { urlParams: options.urlParams })
        }).pipe(HttpClientRequest.bearerToken(Redacted.value(credentials.token)))
        if (options.body !== undefined) request = HttpClientRequest.bodyJsonUnsafe(request, options.body)

        const response = yield* client
          .execute(request)
          .pipe(
            Effect.mapError((error) =>
              error.reason._tag === "InvalidUrlError"
                ? unreachable(`"${url}" is not a valid URL`)
                : unreachable(describeNetworkFailure(error.reason.cause ?? error))
            )
          )
        const text = yield* readBody(response)
        const status = response.status
        const parsed = parseJson(text)

        if (status === 401) return yield* new AdminTokenRefused({ tokenFile: credentials.tokenFile })
        if (status >= 400) {
          const envelope = Result.isSuccess(parsed)
            ? Schema.decodeUnknownOption(ErrorEnvelope)(parsed.success)
            : Option.none()
          if (Option.isSome(envelope)) {
            const { message, code } = envelope.value.error
            return yield* new AdminRequestRejected({ status, serverMessage: message, code: code ?? null })
          }
          return yield* new UnexpectedResponse({
            url,
            status,
            detail: text.trim() === "" ? "empty error body" : firstLine(text)
          })
        }
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
        orElse: () => Effect.fail(unreachable(`no answer within ${Duration.format(requestTimeout)}`))
      })
    )

    const ledgerParams = (query: LedgerQuery): Record<string, string> => ({
      ...(query.after === undefined ? {} : { after: String(query.after) }),
      ...(query.limit === undefined ? {} : { limit: String(query.limit) })
    })

    return {
      url,
      createAccount: (name) => call(AccountCreated, "POST", "/admin/accounts", { body: { name } }),
      listAccounts: call(AccountList, "GET", "/admin/accounts"),
      showAccount: (accountId) => call(AccountDetails, "GET", `/admin/accounts/${segment(accountId)}`),
      deposit: (accountId, deposit) =>
        call(DepositRecorded, "POST", `/admin/accounts/${segment(accountId)}/deposits`, { body: deposit }),
      createKey: (accountId, key) =>
        call(KeyCreated, "POST", `/admin/accounts/${segment(accountId)}/keys`, { body: key }),
      listKeys: (accountId) => call(KeyList, "GET", `/admin/accounts/${segment(accountId)}/keys`),
      revokeKey: (keyId) => call(KeyRevoked, "DELETE", `/admin/keys/${segment(keyId)}`),
      ledgerPage: (accountId, query) =>
        call(LedgerPage, "GET", `/admin/accounts/${segment(accountId)}/ledger`, { urlParams: ledgerParams(query) }),
      replay: call(ReplayReport, "POST", "/admin/replay", { body: {} })
    } satisfies AdminClientShape
  })

export class AdminClient extends Context.Service<AdminClient, AdminClientShape>()("tollgate/cli/AdminClient") {
  /** Reads the `--url` setting and the admin token; needs an `HttpClient`. */
  static readonly layer = Layer.effect(
    AdminClient,
    Effect.gen(function* () {
      const url = yield* ServerUrl
      const credentials = yield* loadAdminCredentials
      return yield* makeAdminClient({ url, credentials })
    })
  )
}
