/**
 * A batch's 24-hour window, driven by TestClock on the embedded store with the built-in simulator catalog: the loop is
 * off and each round is `runDue` by hand. A batch past its window ends `expired` with the lines that did run billed
 * and in its output file, the others never held.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { Batches } from "../../src/app/batch/Batches.ts"
import { fileObject } from "../../src/http/FilesApi.ts"
import { messageBatchResults } from "../../src/http/MessageBatchView.ts"
import { batchCustomer, chatLine, clockMovedServices, submitWithKey } from "./BatchClockHarness.ts"

const services = () => clockMovedServices({ configPath: undefined, batches: { chunk: 1, concurrency: 1 } })

const line = chatLine("sim-openai")

const DAY_SECONDS = 86_400

describe("batch file retention", () => {
  it.effect(
    "deletes files past their expiry in a worker round, but never the input of a batch still running",
    () =>
      Effect.gen(function* () {
        const batches = yield* Batches
        const { accountId, key } = yield* batchCustomer
        const upload = (filename: string, expiresAfterSeconds?: number) =>
          batches.createFile(accountId, {
            purpose: "batch",
            filename,
            content: [0, 1, 2].map(line).join("\n"),
            expiresAfterSeconds
          })
        // The operator's default (30 days), the client's own hour for one unused file and for a batch's input.
        const kept = yield* upload("kept.jsonl")
        const unused = yield* upload("unused.jsonl", 3_600)
        const input = yield* upload("input.jsonl", 3_600)
        const unix = (date: Date | null) => (date === null ? null : Math.floor(date.getTime() / 1000))
        assert.strictEqual(unix(kept.expires_at), (unix(kept.created_at) ?? 0) + 30 * DAY_SECONDS)
        assert.strictEqual(fileObject(unused).expires_at, (unix(unused.created_at) ?? 0) + 3_600)
        const batch = yield* submitWithKey(key, input.id)
        assert.deepStrictEqual(yield* batches.runDue, { claimed: 1, ended: 0, expiredFiles: 0 })

        // Two hours on: both hour-long files are gone for the client at once, before any sweep.
        yield* TestClock.adjust("2 hours")
        const gone = (id: string) => Effect.map(Effect.flip(batches.getFile(accountId, id)), (error) => error._tag)
        assert.deepStrictEqual([yield* gone(unused.id), yield* gone(input.id)], ["FileNotFound", "FileNotFound"])
        const listed = yield* batches.listFiles(accountId, { limit: 10, after: undefined, purpose: undefined })
        assert.deepStrictEqual(
          listed.rows.map((row) => row.id),
          [kept.id]
        )
        // The sweep reclaims the unused one; the running batch's input stays for the batch, which still reads it.
        assert.strictEqual((yield* batches.runDue).expiredFiles, 1)
        // Within the hour of the last sweep, no round sweeps again (one query an hour, not one a round).
        assert.strictEqual((yield* batches.runDue).expiredFiles, 0)
        while ((yield* batches.get(accountId, batch.id)).status !== "completed") yield* batches.runDue
        const done = yield* batches.get(accountId, batch.id)
        assert.strictEqual(done.completed, 3)
        const output = yield* batches.getFile(accountId, done.output_file_id as string)
        assert.strictEqual(unix(output.expires_at), (unix(output.created_at) ?? 0) + 30 * DAY_SECONDS)

        // The batch has ended: its input goes at the next sweep; the 30-day files stay.
        yield* TestClock.adjust("1 hour")
        assert.strictEqual((yield* batches.runDue).expiredFiles, 1)
        assert.strictEqual((yield* batches.getFile(accountId, kept.id)).id, kept.id)
        // (Not moved on 30 days to see those go: every hourly sweep of the services would run 720 times.)
      }).pipe(Effect.provide(services())),
    60_000
  )
})

describe("batch expiry", () => {
  it.effect(
    "ends a batch past its window as expired: run lines billed, the rest never held",
    () =>
      Effect.gen(function* () {
        const batches = yield* Batches
        const { accountId, key } = yield* batchCustomer
        const file = yield* batches.createFile(accountId, {
          purpose: "batch",
          filename: "in.jsonl",
          content: [0, 1, 2, 3].map(line).join("\n")
        })
        const submitted = yield* submitWithKey(key, file.id)
        assert.strictEqual(submitted.status, "validating")
        yield* batches.runDue
        const running = yield* batches.get(accountId, submitted.id)
        assert.strictEqual(running.status, "in_progress")
        assert.strictEqual(running.completed, 1)

        // Not yet: a round just before the window ends runs the next line.
        yield* TestClock.adjust("23 hours")
        yield* batches.runDue
        assert.strictEqual((yield* batches.get(accountId, submitted.id)).completed, 2)

        yield* TestClock.adjust("1 hour")
        yield* batches.runDue
        const expired = yield* batches.get(accountId, submitted.id)
        assert.strictEqual(expired.status, "expired")
        // OpenAI's accounting: the lines that never ran are failed, each in the error file as `batch_expired`.
        assert.deepStrictEqual([expired.total, expired.completed, expired.failed], [4, 2, 2])
        assert.isNotNull(expired.expired_at)
        assert.deepStrictEqual(expired.errors, { message: "the batch did not finish within its 24h completion window" })
        const output = (yield* batches.fileContent(accountId, expired.output_file_id as string)).trim().split("\n")
        assert.deepStrictEqual(
          output.map((text) => JSON.parse(text).custom_id),
          ["l0", "l1"]
        )
        const errors = (yield* batches.fileContent(accountId, expired.error_file_id as string)).trim().split("\n")
        assert.deepStrictEqual(
          errors.map((text) => {
            const { custom_id, response, error } = JSON.parse(text)
            return { custom_id, response, code: error.code }
          }),
          [
            { custom_id: "l2", response: null, code: "batch_expired" },
            { custom_id: "l3", response: null, code: "batch_expired" }
          ]
        )
        // Anthropic's surface: the same lines are `expired`, the answered ones `succeeded`.
        const results = messageBatchResults(yield* batches.state(accountId, submitted.id))
          .trim()
          .split("\n")
          .map((text) => JSON.parse(text).result.type)
        assert.deepStrictEqual(results, ["succeeded", "succeeded", "expired", "expired"])

        const sql = yield* SqlClient.SqlClient
        const holds = yield* sql<{ status: string; captured: string }>`
          SELECT status, captured::text FROM holds WHERE account_id = ${accountId}::uuid`
        assert.deepStrictEqual(
          holds.map((h) => h.status),
          ["settled", "settled"]
        )
        const [row] = yield* sql<{ captured: string; held: string }>`
          SELECT captured::text, held::text FROM accounts WHERE id = ${accountId}::uuid`
        assert.strictEqual(row?.held, "0")
        assert.strictEqual(
          BigInt(row?.captured ?? "-1"),
          holds.reduce((sum, h) => sum + BigInt(h.captured), 0n)
        )
        assert.strictEqual(expired.cost, row?.captured)
        // Nothing moves an expired batch.
        yield* TestClock.adjust("1 hour")
        assert.deepStrictEqual(yield* batches.runDue, { claimed: 0, ended: 0, expiredFiles: 0 })
      }).pipe(Effect.provide(services())),
    60_000
  )
})
