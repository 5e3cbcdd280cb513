/**
 * What the batch suites that move the clock by days share (BatchExpiry, VendorBatchExpiry): the gateway's services on
 * the embedded store with every loop that would run on each jump parked, an account with money and a key, and a chat
 * batch of a few lines submitted with it.
 */
import { Effect, Redacted } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { servicesLayer } from "../../src/AppLayer.ts"
import { Batches, type BatchWorkerOptions } from "../../src/app/batch/Batches.ts"
import type { AuthenticatedKey } from "../../src/app/Keys.ts"
import { Keys } from "../../src/app/Keys.ts"
import { Ledger } from "../../src/app/Ledger.ts"
import { parseDecimal } from "../../src/domain/Money.ts"
import { memoryPglite } from "../support/PgliteTemplate.ts"

/** The services with the batch worker's loop off (each round is `runDue` by hand) and `batches` on top. */
export const clockMovedServices = (options: {
  readonly configPath: string | undefined
  readonly batches: Partial<BatchWorkerOptions>
}) =>
  servicesLayer({
    database: memoryPglite(),
    adminToken: Redacted.make("tga_test_unused"),
    maxBodyBytes: 1024 * 1024,
    configPath: options.configPath,
    contentDir: mkdtempSync(join(tmpdir(), "tollgate-batch-clock-")),
    video: { enabled: false },
    batches: { enabled: false, ...options.batches },
    // The clock jumps by a day: the hold sweep and the background-responses worker are not under test.
    ledger: { sweepIntervalMillis: 3_600_000 },
    responses: { pollMillis: 3_600_000, renewMillis: 3_600_000 },
    // Nor is the audit chain's checkpoint (every 10 minutes: a thousand rounds of queries in a week).
    auditCheckpointMillis: 30 * 86_400_000
  })

/** An account with 10.00 on it and a key with no limits, as a batch's submitter. */
export const batchCustomer = Effect.gen(function* () {
  const ledger = yield* Ledger
  const account = yield* ledger.openAccount("batch")
  yield* ledger.deposit(account.id, parseDecimal("10") as bigint, "seed")
  const created = yield* (yield* Keys).create(account.id, {
    name: "batch",
    models: null,
    expiresAt: null,
    spendLimit: null
  })
  return { accountId: account.id, key: { keyId: created.id, accountId: account.id, models: null, spendLimit: null } }
})

/** Line `i` of a chat-completions batch on `model`: custom id `l<i>`, a one-sentence prompt, 16 tokens at most. */
export const chatLine = (model: string) => (i: number) =>
  JSON.stringify({
    custom_id: `l${i}`,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model, messages: [{ role: "user", content: `Line ${i}.` }], max_tokens: 16 }
  })

/**
 * A chat-completions batch with a 24-hour window over the uploaded file `inputFileId`, submitted with `key` through the
 * Batches service (test/http/batches/BatchChecks.ts `submitChatBatch` goes through the HTTP API).
 */
export const submitWithKey = (key: AuthenticatedKey, inputFileId: string) =>
  Effect.gen(function* () {
    return yield* (yield* Batches).submit({
      key,
      inputFileId,
      endpoint: "/v1/chat/completions",
      completionWindow: "24h",
      metadata: null,
      requestId: "req_test"
    })
  })
