/**
 * The batch worker, on every instance: each round claims due batches under a lease and advances each one by a chunk
 * of lines, `concurrency` lines at a time. A batch is due again at once after its chunk, so batches share the
 * workers and a restart or a lost lease resumes from the events: lines with a result are never run again, and a line
 * stopped between its hold and its result runs again under the same hold (its id is the line's), so it is billed
 * once. Lines finish one commit at a time per batch (a semaphore), each with its hold's settlement or release. A
 * round that fails (the database gone mid-chunk) leaves its batches' leases behind; this worker takes them back at its
 * next round (`BatchStore.claimDue`), so the lines cut off run again under their holds as soon as the database answers.
 * Lines yield to interactive traffic: their key's rate limits and their share of each deployment (BatchChunk.ts).
 *
 * When no line is left the batch finalizes and writes its output and error files; a cancelled or expired batch first
 * releases the holds of lines a stopped run left pending, then ends with the files of the lines that did finish.
 */
import { Clock, Duration, Effect, Queue, Semaphore } from "effect"
import { type BatchesConfig, BatchesDefaults } from "../config/decodeBatches.ts"
import { idlePollMillis } from "../IdlePoll.ts"
import { type InputLine, MESSAGES_ENDPOINT, readBatchInput } from "../../domain/batch/BatchInput.ts"
import {
  type BatchEnding,
  type BatchState,
  decide,
  evolve,
  isFinished,
  type LineResult,
  pendingLines
} from "../../domain/batch/BatchJob.ts"
import { expiredLine, linesAtEnd } from "../../domain/batch/ExpiredLines.ts"
import { randomUUID } from "node:crypto"
import { formatMicros } from "../../domain/Money.ts"
import type { AuthenticatedKey, Keys } from "../Keys.ts"
import { OperatorConfig } from "../OperatorConfig.ts"
import { RateLimiter } from "../RateLimiter.ts"
import type { BatchStore, NewFile } from "../ports/BatchStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import { makeCommits } from "./BatchCommits.ts"
import { lineRequestId, renderOutput } from "./BatchOutput.ts"
import type { LineServices } from "./BatchLineRun.ts"
import { runChunk } from "./BatchChunk.ts"
import type { VendorBatches } from "../ports/VendorBatches.ts"
import { makeVendorLines } from "./VendorLines.ts"
import { submitKey } from "./VendorResults.ts"

export interface BatchWorkerOptions {
  readonly enabled: boolean
  /** How often each instance looks for due batches (a batch submitted or cancelled here is taken at once). */
  readonly pollMillis: number
  /** How long a claim lasts without renewal: the longest a dead instance's batch waits for another worker. */
  readonly leaseMillis: number
  /** Lines of one batch in flight at once. */
  readonly concurrency: number
  /** Lines a batch advances by per claim, before other batches get their turn. */
  readonly chunk: number
  /** Batches one instance advances per round. */
  readonly batchesPerRound: number
  /** How often a round also deletes expired files (docs/api/batches.md#retention): a query, at most this often. */
  readonly fileSweepMillis: number
  /** Percent of each deployment's and upstream's `maxConcurrency` that batch lines may take (app/routing). */
  readonly deploymentSharePercent: number
  /** How often one vendor batch is polled (VendorLines.ts). */
  readonly vendorPollMillis: number
}

export const defaultBatchWorkerOptions: BatchWorkerOptions = {
  enabled: true,
  pollMillis: 1_000,
  leaseMillis: BatchesDefaults.leaseSeconds * 1000,
  concurrency: BatchesDefaults.concurrency,
  chunk: 32,
  batchesPerRound: 2,
  fileSweepMillis: 3_600_000,
  deploymentSharePercent: BatchesDefaults.deploymentSharePercent,
  vendorPollMillis: BatchesDefaults.vendorPollMillis
}

/** The defaults, then the operator's `batches:` section, then what the composition root (or a test) sets. */
export const workerOptions = (
  config: BatchesConfig | undefined,
  overrides: Partial<BatchWorkerOptions>
): BatchWorkerOptions => ({
  ...defaultBatchWorkerOptions,
  ...(config === undefined
    ? {}
    : {
        leaseMillis: config.leaseSeconds * 1000,
        concurrency: config.concurrency,
        deploymentSharePercent: config.deploymentSharePercent,
        vendorPollMillis: config.vendorPollMillis
      }),
  ...overrides
})

export interface RoundReport {
  readonly claimed: number
  readonly ended: number
  /** Files the round's retention sweep deleted (0 when none was due). */
  readonly expiredFiles: number
}

export interface WorkerContext {
  readonly store: BatchStore["Service"]
  readonly services: LineServices
  /** Over the defaults and the operator config's `batches:` (`workerOptions`). */
  readonly options: Partial<BatchWorkerOptions>
  readonly workerId: string
  readonly kicks: Queue.Queue<void>
  readonly keys: Keys["Service"]
  /** Told of each line result this worker committed. */
  readonly lineFinished: (endpoint: string, result: LineResult) => void
  /** Told once a batch has ended, by this worker's commit (its alert: BatchEndedAlert.ts). */
  readonly ended: (state: BatchState) => Effect.Effect<void>
  /** When a file written at `at` expires: `afterSeconds` after, or the operator's retention after (FileRetention.ts). */
  readonly fileExpiry: (at: Date, afterSeconds?: number) => Date | null
  /** Vendor batch APIs for upstreams marked `batch: true` (VendorLines.ts); absent: every line is gateway-run. */
  readonly vendor?: VendorBatches["Service"] | undefined
}

/** The result of a line started and never finished when its batch ends `ending`. */
const cutLine = (state: BatchState, line: number, holdId: string, ending: BatchEnding): LineResult =>
  ending === "expired"
    ? expiredLine(state, line, holdId)
    : {
        line,
        customId: state.customIds[line] ?? "",
        outcome: "cancelled",
        holdId,
        cost: formatMicros(0n),
        requestId: lineRequestId(state.batchId, line),
        response: null,
        error: { code: `batch_${ending}`, message: `the batch was ${ending} before this request finished` }
      }

export const makeBatchWorker = (context: WorkerContext) =>
  Effect.gen(function* () {
    const { store, workerId, kicks } = context
    const config = yield* OperatorConfig
    const options = workerOptions(config.batches, context.options)
    const limiter = yield* RateLimiter
    const services = { ...context.services, batchSharePercent: options.deploymentSharePercent }
    const nowIso = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())
    const inputs = new Map<string, ReadonlyArray<InputLine>>()
    const commits = makeCommits({ store, ledger: services.ledger, nowIso, lineFinished: context.lineFinished })
    const { record, plainAppend, finish } = commits
    const vendor = makeVendorLines({
      vendor: context.vendor,
      models: config.models,
      services,
      commits,
      pollMillis: options.vendorPollMillis,
      keepLease: (batchId) =>
        Effect.flatMap(Clock.currentTimeMillis, (ms) =>
          store.keepLease(batchId, workerId, new Date(ms + options.leaseMillis))
        ),
      load: store.load,
      recordTokens: limiter.recordTokens
    })

    /**
     * Releases the holds of lines started and never finished (their result: `cancelled`, or `expired` past the
     * window), then ends the batch; an expired batch's lines never started are expired by its ending (ExpiredLines.ts).
     */
    const end = (state: BatchState, ending: BatchEnding, message: string | null) =>
      Effect.gen(function* () {
        const lock = yield* Semaphore.make(1)
        for (const [line, holdId] of state.started) {
          if (state.lines.has(line)) continue
          const result = cutLine(state, line, holdId, ending)
          const reason = ending === "cancelled" ? "cancelled" : ending === "expired" ? "expired" : "failed"
          yield* finish(state.batchId, lock)(result, { _tag: "Release", holdId, reason })
        }
        const at = new Date(yield* nowIso)
        const ended = yield* record(
          state.batchId,
          (iso) => ({ type: "End", ending, outputFileId: null, errorFileId: null, message, at: iso }),
          (latest) => {
            // A message batch's results are read from its lines (app/batch/MessageBatches.ts), not from files.
            const files = latest.endpoint === MESSAGES_ENDPOINT ? {} : renderOutput(linesAtEnd(latest, ending))
            const file = (suffix: string, content: string): NewFile => ({
              id: `file-${randomUUID().replaceAll("-", "")}`,
              accountId: latest.accountId,
              purpose: "batch_output",
              filename: `${latest.batchId}_${suffix}.jsonl`,
              content,
              at,
              expiresAt: context.fileExpiry(at, latest.outputExpiresAfterSeconds ?? undefined)
            })
            const output = files.output === undefined ? undefined : file("output", files.output)
            const errors = files.errors === undefined ? undefined : file("error", files.errors)
            const decision = decide(latest, {
              type: "End",
              ending,
              outputFileId: output?.id ?? null,
              errorFileId: errors?.id ?? null,
              message,
              at: at.toISOString()
            })
            const events = decision._tag === "Accepted" ? decision.events : []
            const next = events.reduce<BatchState | undefined>(evolve, latest) as BatchState
            const written = [output, errors].flatMap((f) => (f === undefined ? [] : [f]))
            return store.append(latest, events, next, written, at)
          }
        )
        inputs.delete(state.batchId)
        yield* store.dropLease(state.batchId)
        if (ended._tag === "Written") yield* context.ended(ended.next)
        return ended._tag === "Written"
      })

    /**
     * The batch's key as it is now: its model list and spend limit apply to each chunk's lines, and a key revoked or
     * expired since the submit (or whose account is gone) stops the batch. Undefined when it can no longer be used.
     */
    const keyNow = (state: BatchState) =>
      Effect.gen(function* () {
        const views = yield* context.keys
          .list(state.accountId)
          .pipe(Effect.catchTag("LedgerRejected", () => Effect.succeed([])))
        const view = views.find((candidate) => candidate.id === state.key.keyId)
        const nowMs = yield* Clock.currentTimeMillis
        if (view === undefined || view.revokedAt !== null) return undefined
        if (view.expiresAt !== null && Date.parse(view.expiresAt) <= nowMs) return undefined
        return {
          keyId: view.id,
          accountId: state.accountId,
          models: view.models,
          spendLimit: view.spendLimit,
          rateLimits: view.rateLimits
        } satisfies AuthenticatedKey
      })

    /** The batch's requests, parsed once per instance; undefined when its input file was deleted. */
    const inputOf = (state: BatchState) =>
      Effect.gen(function* () {
        const cached = inputs.get(state.batchId)
        if (cached !== undefined) return cached
        const content = yield* store.fileContent(state.accountId, state.inputFileId)
        if (content === undefined) return undefined
        const read = readBatchInput(content, state.endpoint)
        if ("_tag" in read) return undefined
        inputs.set(state.batchId, read)
        return read
      })

    /** One claim's worth of work on a batch; true when it ended. */
    const advance = (batchId: string): Effect.Effect<boolean, StoreUnavailable> =>
      Effect.gen(function* () {
        let state = yield* store.load(batchId)
        if (state === undefined || isFinished(state.status)) {
          yield* store.dropLease(batchId)
          return false
        }
        const nowMs = yield* Clock.currentTimeMillis
        if (nowMs >= Date.parse(state.expiresAt)) {
          yield* vendor.cancelAll(state)
          return yield* end(state, "expired", "the batch did not finish within its 24h completion window")
        }
        if (state.status === "cancelling") {
          // The vendors' batches are cancelled and read to their end first: what they did finish is billed.
          const lines = yield* inputOf(state)
          const key = (yield* keyNow(state)) ?? submitKey(state)
          const open = lines === undefined ? false : (yield* vendor.step(state, key, lines)).open
          if (!open) return yield* end(state, "cancelled", null)
          yield* store.keepLease(batchId, workerId, new Date((yield* Clock.currentTimeMillis) + options.leaseMillis))
          return false
        }
        if (state.status === "finalizing") return yield* end(state, "completed", null)
        if (state.status === "validating") {
          const started = yield* record(batchId, (at) => ({ type: "Start", at }), plainAppend)
          if (started._tag === "Written") state = started.next
        }
        const pending = pendingLines(state)
        if (pending.length === 0) {
          const final = yield* record(batchId, (at) => ({ type: "Finalize", at }), plainAppend)
          return final._tag === "Written" ? yield* end(final.next, "completed", null) : false
        }
        const lines = yield* inputOf(state)
        const key = yield* keyNow(state)
        if (lines === undefined || key === undefined) {
          yield* vendor.cancelAll(state)
          return yield* end(
            state,
            "failed",
            lines === undefined
              ? "the batch's input file was deleted before every line ran"
              : "the batch's API key was revoked or expired before every line ran"
          )
        }
        const { gatewayLines, open } = yield* vendor.step(state, key, lines)
        const chunk = gatewayLines.slice(0, options.chunk)
        // Only vendor batches out: polled again at the next poll, not at once.
        const waited =
          chunk.length === 0
            ? open
            : yield* runChunk({ store, services, limiter, options, workerId, commits }, state, key, lines, chunk)
        // Due again: the next round (here or anywhere) takes the next chunk — at once, or, when lines had to wait
        // for their key's limits or the deployments' batch share, at the next poll, interactive calls going first.
        yield* store.keepLease(batchId, workerId, new Date(yield* Clock.currentTimeMillis))
        if (!waited) yield* Queue.offer(kicks, undefined)
        return false
      })

    /** Deletes expired files once `fileSweepMillis` has passed since the last sweep (on this instance). */
    let nextSweep = 0
    const sweepFiles = Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      if (nowMs < nextSweep) return 0
      const deleted = yield* store.deleteExpiredFiles(new Date(nowMs))
      nextSweep = nowMs + options.fileSweepMillis
      if (deleted > 0) yield* Effect.logInfo("expired batch files deleted").pipe(Effect.annotateLogs({ n: deleted }))
      return deleted
    })

    const runDue = Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const claimed = yield* store.claimDue(
        workerId,
        new Date(nowMs),
        new Date(nowMs + options.leaseMillis),
        options.batchesPerRound
      )
      const ended = yield* Effect.forEach(claimed, advance, { concurrency: "unbounded" })
      // After the round's batches: a batch that just ended no longer keeps its input file.
      const expiredFiles = yield* sweepFiles
      return { claimed: claimed.length, ended: ended.filter(Boolean).length, expiredFiles } satisfies RoundReport
    }).pipe(Effect.withSpan("Batches.runDue"))

    if (options.enabled) {
      const round = runDue.pipe(
        Effect.catch((error) => Effect.as(Effect.logWarning("batch worker round failed", error.message), undefined)),
        Effect.catchDefect((defect) => Effect.logError("batch worker round crashed", defect))
      )
      // A batch submitted here, or a chunk just finished, wakes the loop at once; an idle one asks less often. A
      // failed round (the database gone) asks again soon: the batch it left is taken back at once (`claimDue`).
      const idle = idlePollMillis(options)
      yield* round.pipe(
        Effect.flatMap((report) =>
          Effect.race(
            Effect.sleep(Duration.millis(report?.claimed !== 0 ? options.pollMillis : idle)),
            Queue.take(kicks)
          )
        ),
        Effect.forever,
        Effect.forkScoped
      )
    }
    return { runDue }
  })
