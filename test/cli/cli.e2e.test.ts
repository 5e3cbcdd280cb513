/**
 * The CLI against a real gateway (embedded database, ephemeral port): the operator's whole first session, from an
 * account to a revoked key. Skipped until `test/support/TestGateway.ts` exists.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { runCli } from "../../src/cli/runCli.ts"

interface TestGateway {
  readonly url: string
  readonly adminToken: string
  close(): Promise<void>
}

// Loaded by URL at run time so this file compiles and is collected before the module exists.
const gatewayModule = new URL("../support/TestGateway.ts", import.meta.url)

class Gateway extends Context.Service<Gateway, TestGateway>()("test/cli/Gateway") {
  static readonly layer = Layer.effect(
    Gateway,
    Effect.acquireRelease(
      Effect.promise(
        () => import(gatewayModule.href) as Promise<{ startTestGateway: () => Promise<TestGateway> }>
      ).pipe(Effect.flatMap((module) => Effect.promise(() => module.startTestGateway()))),
      (gateway) => Effect.promise(() => gateway.close())
    )
  )
}

/** Runs `tollgate` against the test gateway; fails the test with its stderr when the exit code is not the one expected. */
const tollgate = (argv: ReadonlyArray<string>, options: { readonly exitCode?: number; readonly token?: string } = {}) =>
  Effect.gen(function* () {
    const gateway = yield* Gateway
    const result = yield* runCli(argv, {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_ADMIN_TOKEN: options.token ?? gateway.adminToken
    })
    assert.strictEqual(
      result.exitCode,
      options.exitCode ?? 0,
      `tollgate ${argv.join(" ")}\n${result.stdout}\n${result.stderr}`
    )
    return result
  })

const tollgateJson = (argv: ReadonlyArray<string>) =>
  Effect.map(tollgate([...argv, "--json"]), (result) => JSON.parse(result.stdout))

const countOf = (text: string, word: string) => text.split(word).length - 1

describe.skipIf(!existsSync(fileURLToPath(gatewayModule)))("tollgate against a real gateway", () => {
  layer(Gateway.layer, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("accounts, idempotent deposits, keys, ledger, replay and revocation", () =>
      Effect.gen(function* () {
        const account = yield* tollgateJson(["accounts", "create", "E2E Co"])
        assert.strictEqual(account.name, "E2E Co")
        const accountId: string = account.id

        const first = yield* tollgate(["deposit", accountId, "12.50", "--reference", "e2e-invoice-1"])
        assert.include(first.stdout, `Deposited 12.500000 to ${accountId}.`)
        const again = yield* tollgate(["deposit", accountId, "12.50", "--reference", "e2e-invoice-1"])
        assert.include(again.stdout, "reference  e2e-invoice-1")

        const shown = yield* tollgateJson(["accounts", "show", accountId])
        assert.strictEqual(shown.balance.deposited, "12.500000", "the same reference deposits once")
        assert.strictEqual(shown.balance.available, "12.500000")

        const generated = yield* tollgate(["deposit", accountId, "1"])
        assert.match(generated.stderr, /^Generated reference \S+; to retry this deposit safely, pass --reference \S+/)
        const details = yield* tollgate(["accounts", "show", accountId])
        assert.include(details.stdout, "deposited  13.500000")

        const listed = yield* tollgate(["accounts", "list"])
        assert.match(listed.stdout, /^ID\s+NAME\s+AVAILABLE\s+CREATED/)
        assert.include(listed.stdout, accountId)

        const created = yield* tollgate([
          "keys",
          "create",
          accountId,
          "--name",
          "e2e",
          "--model",
          "gpt-4o-mini",
          "--spend-limit",
          "5.00",
          "--json"
        ])
        const key = JSON.parse(created.stdout)
        assert.isString(key.key)
        assert.isAbove(key.key.length, 8)
        assert.strictEqual(key.accountId, accountId)
        assert.include(created.stderr, "it will not be shown again")

        const human = yield* tollgate(["keys", "create", accountId, "--name", "human"])
        assert.include(human.stdout, "Copy this key now: it will not be shown again.")

        const keys = yield* tollgate(["keys", "list", accountId])
        assert.match(keys.stdout, /^ID\s+NAME\s+PREFIX\s+MODELS/)
        assert.include(keys.stdout, key.id)
        assert.include(keys.stdout, "gpt-4o-mini")
        assert.strictEqual(countOf(keys.stdout, "active"), 2)
        assert.notInclude(keys.stdout, key.key, "a listing never shows a secret")
        const keysJson = yield* tollgateJson(["keys", "list", accountId])
        assert.strictEqual(keysJson.data.length, 2)
        assert.notInclude(JSON.stringify(keysJson), key.key)

        const ledger = yield* tollgateJson(["ledger", accountId])
        const deposits = ledger.data.filter((entry: { type: string }) => entry.type === "FundsDeposited")
        assert.deepStrictEqual(
          deposits.map((entry: { amount: string }) => entry.amount),
          ["12.500000", "1.000000"]
        )
        const paged = yield* tollgateJson(["ledger", accountId, "--limit", "1", "--all"])
        assert.deepStrictEqual(paged, { data: ledger.data, next: null })
        const firstPage = yield* tollgate(["ledger", accountId, "--limit", "1"])
        assert.match(firstPage.stdout, /^POSITION\s+TYPE\s+AMOUNT/)
        assert.include(firstPage.stdout, `More entries: tollgate ledger ${accountId} --after`)

        const replay = yield* tollgate(["replay", "--verify"])
        assert.match(replay.stdout, /^Replay verified/)

        const revoked = yield* tollgate(["keys", "revoke", key.id])
        assert.include(revoked.stdout, `Revoked key ${key.id}`)
        const afterRevoke = yield* tollgateJson(["keys", "list", accountId])
        const revokedKey = afterRevoke.data.find((entry: { id: string }) => entry.id === key.id)
        assert.isString(revokedKey.revokedAt)
        const table = yield* tollgate(["keys", "list", accountId])
        assert.strictEqual(countOf(table.stdout, "revoked"), 1)

        const verifiedAgain = yield* tollgate(["replay", "--verify"])
        assert.match(verifiedAgain.stdout, /^Replay verified/)
      })
    )

    it.effect("explains an unknown account and a refused token", () =>
      Effect.gen(function* () {
        const missing = yield* tollgate(["accounts", "show", "acc_does_not_exist"], { exitCode: 1 })
        assert.match(missing.stderr, /^error: the server refused the request: .+ \(HTTP 404/)

        const refused = yield* tollgate(["accounts", "list"], { exitCode: 1, token: "not-the-admin-token" })
        assert.include(refused.stderr, "error: the admin token was refused: set TOLLGATE_ADMIN_TOKEN or check ")
        assert.notInclude(refused.stderr, "not-the-admin-token")
      })
    )
  })
})
