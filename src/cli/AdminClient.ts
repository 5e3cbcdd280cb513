/**
 * The admin API as the CLI calls it: one method per endpoint, each answering the decoded value together with the raw
 * JSON body (what `--json` prints). Transport and HTTP failures become the user-facing errors of `CliErrors.ts`.
 */
import { Context, Effect, Layer } from "effect"
import { HttpClient } from "effect/http"
import {
  AccountCreated,
  AdminBatch,
  AdminBatchList,
  type BatchListQuery,
  AccountDetails,
  AccountList,
  DepositRecorded,
  KeyCreated,
  KeyList,
  type KeyRequest,
  KeyRevoked,
  LedgerPage,
  type LedgerQuery,
  ReplayReport
} from "./AdminApi.ts"
import { type AdminCredentials, loadAdminCredentials } from "./AdminToken.ts"
import {
  AdminRequestRejected,
  AdminTokenRefused,
  type ServerUnreachable,
  type UnexpectedResponse
} from "./CliErrors.ts"
import { ServerUrl } from "./CliSettings.ts"
import { type JsonAnswer, makeJsonCall, rejection } from "./JsonCall.ts"

export { describeNetworkFailure } from "./JsonCall.ts"

export type AdminAnswer<A> = JsonAnswer<A>

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
  readonly listBatches: (query: BatchListQuery) => Call<AdminBatchList>
  readonly showBatch: (batchId: string) => Call<AdminBatch>
  readonly cancelBatch: (batchId: string) => Call<AdminBatch>
}

const segment = encodeURIComponent

/** The client for one server and token; `layer` builds it from the command line and the environment. */
export const makeAdminClient = (options: { readonly url: string; readonly credentials: AdminCredentials }) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const { url, credentials } = options

    const { call } = makeJsonCall({
      name: "AdminClient.call",
      client,
      url,
      credential: credentials.token,
      rejected: (status, text): AdminTokenRefused | AdminRequestRejected | UnexpectedResponse =>
        status === 401
          ? new AdminTokenRefused({ tokenFile: credentials.tokenFile })
          : rejection(
              url,
              status,
              text,
              ({ message, code }) => new AdminRequestRejected({ status, serverMessage: message, code })
            )
    })

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
      replay: call(ReplayReport, "POST", "/admin/replay", { body: {} }),
      listBatches: (query) =>
        call(AdminBatchList, "GET", "/admin/batches", {
          urlParams: Object.fromEntries(
            Object.entries(query).flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)]]))
          )
        }),
      showBatch: (batchId) => call(AdminBatch, "GET", `/admin/batches/${segment(batchId)}`),
      cancelBatch: (batchId) => call(AdminBatch, "POST", `/admin/batches/${segment(batchId)}/cancel`, { body: {} })
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
