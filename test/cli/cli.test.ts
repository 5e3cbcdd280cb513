import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runCli } from "../../src/cli/runCli.ts"
import { closedPort, unauthorizedServer } from "./LocalServer.ts"

const withToken = { TOLLGATE_ADMIN_TOKEN: "test-token" }

const tempDataDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "tollgate-cli-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const expectUsageError = (argv: ReadonlyArray<string>, message: string) =>
  Effect.gen(function* () {
    const result = yield* runCli(argv, withToken)
    assert.strictEqual(result.exitCode, 2, result.stderr)
    assert.include(result.stderr, message)
    assert.include(result.stderr, '--help" for usage.')
    assert.strictEqual(result.stdout, "")
  })

describe("tollgate argument parsing", () => {
  it.live("refuses an amount with more than 6 decimals before calling the server", () =>
    expectUsageError(
      ["deposit", "acc_1", "1.1234567"],
      'Invalid value for argument <amount>: "1.1234567". Expected: at most 6 decimals'
    )
  )

  it.live("refuses a zero or malformed amount", () =>
    Effect.gen(function* () {
      yield* expectUsageError(["deposit", "acc_1", "0"], "Expected: an amount above zero")
      yield* expectUsageError(["deposit", "acc_1", "12,50"], "Expected: a decimal amount like 12.50")
      yield* expectUsageError(
        ["keys", "create", "acc_1", "--name", "ci", "--spend-limit", "5.0000001"],
        "Invalid value for flag --spend-limit"
      )
    })
  )

  it.live("requires the account name, and a non-blank one", () =>
    Effect.gen(function* () {
      yield* expectUsageError(["accounts", "create"], "Missing required argument: name")
      yield* expectUsageError(["accounts", "create", "  "], "Expected: a non-blank name")
    })
  )

  it.live("requires --name for a key and checks --expires-at and the ledger paging flags", () =>
    Effect.gen(function* () {
      yield* expectUsageError(["keys", "create", "acc_1"], "Missing required flag: --name")
      yield* expectUsageError(
        ["keys", "create", "acc_1", "--name", "ci", "--expires-at", "tomorrow"],
        "Expected: an ISO date like 2027-01-31"
      )
      yield* expectUsageError(
        ["keys", "create", "acc_1", "--name", "ci", "--expires-at", "2027-02-30"],
        "Expected: a date that exists on the calendar"
      )
      yield* expectUsageError(
        ["keys", "create", "acc_1", "--name", "ci", "--expires-at", "2020-01-01T00:00:00Z"],
        'Invalid value for flag --expires-at: "2020-01-01T00:00:00Z". Expected: a time in the future'
      )
      yield* expectUsageError(["ledger", "acc_1", "--limit", "0"], "Expected: a page size of 1 or more")
      yield* expectUsageError(["ledger", "acc_1", "--after", "x"], "--after")
    })
  )

  it.live("requires --verify for replay and an http(s) --url", () =>
    Effect.gen(function* () {
      yield* expectUsageError(["replay"], "Missing required flag: --verify")
      yield* expectUsageError(["accounts", "list", "--url", "localhost:8080"], "Expected: an http(s) URL")
    })
  )

  it.live("rejects unknown commands and prints help with exit 0 when asked", () =>
    Effect.gen(function* () {
      const unknown = yield* runCli(["acounts", "list"], withToken)
      assert.strictEqual(unknown.exitCode, 2)
      assert.include(unknown.stderr, "acounts")

      const help = yield* runCli(["keys", "create", "--help"], {})
      assert.strictEqual(help.exitCode, 0)
      assert.include(help.stdout, "tollgate keys create [flags] <accountId>")
      assert.include(help.stdout, "--spend-limit amount")

      const version = yield* runCli(["--version"], {})
      assert.strictEqual(version.exitCode, 0)
      assert.match(version.stdout, /^tollgate v\d+\.\d+\.\d+/)
    })
  )
})

describe("tollgate failures", () => {
  it.live("explains a server that is down, on stderr, with exit 1", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const url = `http://127.0.0.1:${port}`
      const result = yield* runCli(["accounts", "list", "--url", url], withToken)
      assert.strictEqual(result.exitCode, 1)
      assert.strictEqual(
        result.stderr,
        `error: cannot reach the Tollgate server at ${url}: connection refused — is it running? (npm start)\n`
      )
      assert.strictEqual(result.stdout, "")
    })
  )

  it.live("takes the server URL from TOLLGATE_URL, and --url over it", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const fromEnv = yield* runCli(["accounts", "list"], { ...withToken, TOLLGATE_URL: `http://127.0.0.1:${port}/` })
      assert.include(fromEnv.stderr, `at http://127.0.0.1:${port}: connection refused`)

      const other = yield* closedPort
      const fromFlag = yield* runCli(["--url", `http://127.0.0.1:${other}`, "accounts", "list"], {
        ...withToken,
        TOLLGATE_URL: `http://127.0.0.1:${port}`
      })
      assert.include(fromFlag.stderr, `at http://127.0.0.1:${other}: connection refused`)
    })
  )

  it.live("says where it looked when there is no admin token at all", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* tempDataDir
        const result = yield* runCli(["accounts", "list"], { TOLLGATE_DATA_DIR: dataDir })
        assert.strictEqual(result.exitCode, 1)
        assert.include(result.stderr, "error: no admin token found: set TOLLGATE_ADMIN_TOKEN or create ")
        assert.include(result.stderr, join(dataDir, "admin-token"))
      })
    )
  )

  it.live(
    "sends the token from <data dir>/admin-token as a bearer header, and explains a 401 without printing it",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dataDir = yield* tempDataDir
          writeFileSync(join(dataDir, "admin-token"), "file-token-123\n")
          const server = yield* unauthorizedServer
          const result = yield* runCli(["ledger", "acc_1", "--limit", "5", "--url", server.url], {
            TOLLGATE_DATA_DIR: dataDir
          })
          assert.strictEqual(result.exitCode, 1)
          assert.strictEqual(
            result.stderr,
            `error: the admin token was refused: set TOLLGATE_ADMIN_TOKEN or check ${join(dataDir, "admin-token")}\n`
          )
          assert.deepStrictEqual(server.seen, [
            { method: "GET", url: "/admin/accounts/acc_1/ledger?limit=5", authorization: "Bearer file-token-123" }
          ])
          assert.notInclude(result.stdout + result.stderr, "file-token-123")
        })
      )
  )

  it.live("prefers TOLLGATE_ADMIN_TOKEN over the token file", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* tempDataDir
        writeFileSync(join(dataDir, "admin-token"), "file-token")
        const server = yield* unauthorizedServer
        const result = yield* runCli(["replay", "--verify", "--url", server.url], {
          TOLLGATE_DATA_DIR: dataDir,
          TOLLGATE_ADMIN_TOKEN: "env-token"
        })
        assert.strictEqual(result.exitCode, 1)
        assert.strictEqual(server.seen[0]?.authorization, "Bearer env-token")
        assert.strictEqual(server.seen[0]?.method, "POST")
        assert.notInclude(result.stdout + result.stderr, "env-token")
      })
    )
  )
})
