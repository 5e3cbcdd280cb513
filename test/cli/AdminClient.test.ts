import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { HttpClient, HttpClientError, type HttpClientRequest, HttpClientResponse } from "effect/http"
import { describeNetworkFailure, makeAdminClient } from "../../src/cli/AdminClient.ts"

interface Seen {
  readonly method: string
  readonly url: string
  readonly authorization: string | undefined
  readonly body: unknown
}

/** An HttpClient answering one canned response, recording what was asked: the admin client's edge, swapped. */
const cannedClient = (status: number, body: string, seen: Array<Seen>) =>
  HttpClient.make((request: HttpClientRequest.HttpClientRequest, url) =>
    Effect.sync(() => {
      const raw = request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : undefined
      seen.push({
        method: request.method,
        url: url.toString(),
        authorization: request.headers.authorization,
        body: raw === undefined ? undefined : JSON.parse(raw)
      })
      return HttpClientResponse.fromWeb(request, new Response(body, { status }))
    })
  )

const credentials = { token: Redacted.make("admin-secret"), tokenFile: "data/admin-token" }

const clientAnswering = (status: number, body: unknown, seen: Array<Seen> = []) =>
  makeAdminClient({ url: "http://gateway.test", credentials }).pipe(
    Effect.provideService(
      HttpClient.HttpClient,
      cannedClient(status, typeof body === "string" ? body : JSON.stringify(body), seen)
    )
  )

describe("AdminClient", () => {
  it.effect("sends the token as a bearer header only and the body as JSON", () =>
    Effect.gen(function* () {
      const seen: Array<Seen> = []
      const admin = yield* clientAnswering(
        201,
        { accountId: "acc 1", amount: "1.000000", reference: "r1", extra: true },
        seen
      )
      const answer = yield* admin.deposit("acc 1", { amount: "1.000000", reference: "r1" })
      assert.deepStrictEqual(seen, [
        {
          method: "POST",
          url: "http://gateway.test/admin/accounts/acc%201/deposits",
          authorization: "Bearer admin-secret",
          body: { amount: "1.000000", reference: "r1" }
        }
      ])
      assert.strictEqual(answer.status, 201)
      assert.deepStrictEqual(answer.body, { accountId: "acc 1", amount: "1.000000", reference: "r1", extra: true })
      assert.strictEqual(answer.value.reference, "r1")
    })
  )

  it.effect("passes the ledger cursor and page size as query parameters", () =>
    Effect.gen(function* () {
      const seen: Array<Seen> = []
      const admin = yield* clientAnswering(200, { data: [], next: null }, seen)
      yield* admin.ledgerPage("acc_1", { after: 10, limit: 2 })
      yield* admin.ledgerPage("acc_1", {})
      assert.deepStrictEqual(
        seen.map((request) => request.url),
        [
          "http://gateway.test/admin/accounts/acc_1/ledger?after=10&limit=2",
          "http://gateway.test/admin/accounts/acc_1/ledger"
        ]
      )
    })
  )

  it.effect("turns a 401 into AdminTokenRefused naming the token file", () =>
    Effect.gen(function* () {
      const admin = yield* clientAnswering(401, { error: { message: "bad token", type: "auth", code: null } })
      const error = yield* Effect.flip(admin.listAccounts)
      assert.strictEqual(error._tag, "AdminTokenRefused")
      assert.strictEqual(
        error.message,
        "the admin token was refused: set TOLLGATE_ADMIN_TOKEN or check data/admin-token"
      )
    })
  )

  it.effect("carries the server's error message for other 4xx answers", () =>
    Effect.gen(function* () {
      const admin = yield* clientAnswering(404, {
        error: { message: "account acc_9 not found", type: "not_found_error", param: null, code: "account_not_found" }
      })
      const error = yield* Effect.flip(admin.showAccount("acc_9"))
      assert.strictEqual(error._tag, "AdminRequestRejected")
      assert.strictEqual(
        error.message,
        "the server refused the request: account acc_9 not found (HTTP 404, account_not_found)"
      )
    })
  )

  it.effect("says when the answer is not the admin API's", () =>
    Effect.gen(function* () {
      const notJson = yield* Effect.flip((yield* clientAnswering(200, "<html>hello</html>")).listAccounts)
      assert.strictEqual(notJson._tag, "UnexpectedResponse")
      assert.include(notJson.message, "the body is not JSON")

      const wrongShape = yield* Effect.flip((yield* clientAnswering(200, { accounts: [] })).listAccounts)
      assert.strictEqual(wrongShape._tag, "UnexpectedResponse")

      const bareError = yield* Effect.flip((yield* clientAnswering(502, "Bad Gateway")).listAccounts)
      assert.strictEqual(
        bareError.message,
        "unexpected answer from http://gateway.test (HTTP 502): Bad Gateway — is this a Tollgate server?"
      )
    })
  )

  it.effect("reports a transport failure as an unreachable server", () =>
    Effect.gen(function* () {
      const refused = HttpClient.make((request) =>
        Effect.fail(
          new HttpClientError.HttpClientError({
            reason: new HttpClientError.TransportError({
              request,
              cause: new TypeError("fetch failed", { cause: Object.assign(new Error("x"), { code: "ECONNREFUSED" }) })
            })
          })
        )
      )
      const admin = yield* makeAdminClient({ url: "http://127.0.0.1:9", credentials }).pipe(
        Effect.provideService(HttpClient.HttpClient, refused)
      )
      const error = yield* Effect.flip(admin.replay)
      assert.strictEqual(
        error.message,
        "cannot reach the Tollgate server at http://127.0.0.1:9: connection refused — is it running? (npm start)"
      )
    })
  )

  it("finds the socket error code however deep fetch nests it", () => {
    const nested = new TypeError("fetch failed", {
      cause: new AggregateError([Object.assign(new Error("connect"), { code: "ECONNREFUSED" })], "all failed")
    })
    assert.strictEqual(describeNetworkFailure(nested), "connection refused")
    assert.strictEqual(describeNetworkFailure({ code: "ENOTFOUND" }), "host not found")
    assert.strictEqual(describeNetworkFailure(new TypeError("fetch failed")), "the connection failed")
  })
})
