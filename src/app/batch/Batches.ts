/**
 * Batches and their files (docs/api/batches.md). `submit` checks every line as the chat endpoint would (model, key's
 * list, fields) and records `BatchSubmitted` — nothing is held for a batch that cannot run. A worker on any instance
 * then takes the batch under a lease and runs its lines (BatchWorker.ts), each under a hold of its own placed when
 * the line starts and resolved, with the line's result, when it ends (BatchLineRun.ts).
 */
import { Clock, Context, Effect, Layer, Option, Queue } from "effect"
import { randomUUID } from "node:crypto"
import {
  BATCH_ENDPOINTS,
  type InputLine,
  isBatchEndpoint,
  type LineEndpoint,
  MESSAGE_BATCH_PURPOSE,
  MESSAGES_ENDPOINT
} from "../../domain/batch/BatchInput.ts"
import { type BatchState, evolve, type BatchSubmitted } from "../../domain/batch/BatchJob.ts"
import { formatMicros } from "../../domain/Money.ts"
import { Alerts } from "../alerts/Alerts.ts"
import { heldCallServices } from "../HeldCall.ts"
import { type AuthenticatedKey, Keys } from "../Keys.ts"
import {
  type BatchPage,
  type BatchRow,
  BatchStore,
  type FileRow,
  type NewFile,
  type Page
} from "../ports/BatchStore.ts"
import { ChatDialects } from "../ports/ChatDialects.ts"
import { ResponseStore } from "../ports/ResponseStore.ts"
import { TokenCounter } from "../ports/TokenCounter.ts"
import { ConversationStore } from "../ports/ConversationStore.ts"
import { OperatorConfig } from "../OperatorConfig.ts"
import { makeTurnBuilder } from "../responses/TurnBuilder.ts"
import type { StoreRefused, StoreUnavailable } from "../StoreErrors.ts"
import { makeCommits } from "./BatchCommits.ts"
import { BatchInvalid, BatchNotCancellable, BatchNotDeletable, BatchNotFound, FileNotFound } from "./BatchErrors.ts"
import { VendorBatches } from "../ports/VendorBatches.ts"
import { type BatchWorkerOptions, makeBatchWorker, type RoundReport } from "./BatchWorker.ts"
import { alertWhenEnded } from "./BatchEndedAlert.ts"
import { type LineTally, makeLineTallies } from "./BatchLineTally.ts"
import { fileExpiryFor, isExpired } from "./FileRetention.ts"
import { checkBatchLines, checkMessageRequests } from "./BatchLineChecks.ts"
import type { LineServices } from "./LinePlans.ts"

export { type BatchWorkerOptions, defaultBatchWorkerOptions } from "./BatchWorker.ts"

const COMPLETION_WINDOW = "24h"
const WINDOW_MILLIS = 24 * 3_600_000

export interface SubmitBatch {
  readonly key: AuthenticatedKey
  readonly inputFileId: string
  readonly endpoint: string
  readonly completionWindow: string
  readonly metadata: Readonly<Record<string, string>> | null
  readonly requestId: string
  /** OpenAI's `output_expires_after.seconds`: how long its output and error files are kept (null: the operator's). */
  readonly outputExpiresAfterSeconds?: number | null
}

/** Anthropic's Message Batches: each request's `params` is a Messages API body (app/batch/MessageBatches.ts). */
export interface SubmitMessages {
  readonly key: AuthenticatedKey
  readonly requests: ReadonlyArray<{ readonly customId: string; readonly params: Record<string, unknown> }>
  readonly requestId: string
}

/** An upload; `expiresAfterSeconds` is the client's own retention (OpenAI's `expires_after`), else the operator's. */
export interface NewUpload {
  readonly purpose: string
  readonly filename: string
  readonly content: string
  readonly expiresAfterSeconds?: number | undefined
}

type Paged<A> = { readonly rows: ReadonlyArray<A>; readonly hasMore: boolean }

export class Batches extends Context.Service<
  Batches,
  {
    readonly createFile: (accountId: string, file: NewUpload) => Effect.Effect<FileRow, StoreUnavailable>
    readonly getFile: (accountId: string, id: string) => Effect.Effect<FileRow, FileNotFound | StoreUnavailable>
    readonly fileContent: (accountId: string, id: string) => Effect.Effect<string, FileNotFound | StoreUnavailable>
    readonly listFiles: (
      accountId: string,
      page: Page & { readonly purpose: string | undefined }
    ) => Effect.Effect<Paged<FileRow>, StoreUnavailable>
    readonly deleteFile: (accountId: string, id: string) => Effect.Effect<void, FileNotFound | StoreUnavailable>
    readonly submit: (
      input: SubmitBatch
    ) => Effect.Effect<BatchRow, BatchInvalid | FileNotFound | BatchNotFound | StoreUnavailable | StoreRefused>
    /** Records a message batch, every request planned first as `POST /v1/messages` would plan it. */
    readonly submitMessages: (
      input: SubmitMessages
    ) => Effect.Effect<BatchState, BatchInvalid | StoreUnavailable | StoreRefused>
    readonly get: (accountId: string, id: string) => Effect.Effect<BatchRow, BatchNotFound | StoreUnavailable>
    /** The batch replayed from its events: every line's result. */
    readonly state: (accountId: string, id: string) => Effect.Effect<BatchState, BatchNotFound | StoreUnavailable>
    readonly list: (accountId: string, page: BatchPage) => Effect.Effect<Paged<BatchRow>, StoreUnavailable>
    readonly cancel: (
      accountId: string,
      id: string
    ) => Effect.Effect<BatchRow, BatchNotFound | BatchNotCancellable | StoreUnavailable>
    /** Deletes an ended batch (its row, and a message batch's requests); its events stay. */
    readonly delete: (
      accountId: string,
      id: string
    ) => Effect.Effect<void, BatchNotFound | BatchNotDeletable | StoreUnavailable>
    /** One worker round: claims due batches and advances each by a chunk of lines. */
    readonly runDue: Effect.Effect<RoundReport, StoreUnavailable>
    /** This instance's worker id (lease owner). */
    readonly workerId: string
    /** The lines this instance's worker finished since it started, by endpoint and outcome (for `/metrics`). */
    readonly lineStats: () => ReadonlyArray<LineTally>
  }
>()("tollgate/app/batch/Batches") {
  static readonly layerWith = (options: Partial<BatchWorkerOptions>) =>
    Layer.effect(
      Batches,
      Effect.gen(function* () {
        const store = yield* BatchStore
        const held = yield* heldCallServices
        const dialects = yield* ChatDialects
        const responses = yield* ResponseStore
        const config = yield* OperatorConfig
        const conversations = yield* ConversationStore
        const turns = makeTurnBuilder({ store: responses, conversations, dialect: dialects.responses, config })
        const fileExpiry = fileExpiryFor(config)
        const services: LineServices = { ...held, dialects, responses, tokens: yield* TokenCounter, turns }
        const kicks = yield* Queue.sliding<void>(1)
        const workerId = `batch-worker-${randomUUID()}`
        const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
        const commits = makeCommits({
          store,
          ledger: held.ledger,
          nowIso: Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())
        })
        const paged = <A>(rows: ReadonlyArray<A>, limit: number): Paged<A> => ({
          rows: rows.slice(0, limit),
          hasMore: rows.length > limit
        })

        // Not one of the client's files: a message batch's requests (its own file), or an expired file.
        const getFile = (accountId: string, id: string) =>
          Effect.flatMap(Effect.zip(store.findFile(accountId, id), now), ([row, at]) =>
            row === undefined || row.purpose === MESSAGE_BATCH_PURPOSE || isExpired(row, at)
              ? Effect.fail(new FileNotFound({ fileId: id }))
              : Effect.succeed(row)
          )

        const get = (accountId: string, id: string) =>
          Effect.flatMap(store.find(accountId, id), (row) =>
            row === undefined ? Effect.fail(new BatchNotFound({ batchId: id })) : Effect.succeed(row)
          )

        const submit = Effect.fnUntraced(function* (input: SubmitBatch) {
          const endpoint = input.endpoint
          if (!isBatchEndpoint(endpoint)) {
            const message = `endpoint: '${endpoint}' is not available for batches; use one of ${BATCH_ENDPOINTS.join(", ")}`
            return yield* new BatchInvalid({ message, param: "endpoint", line: null, code: "invalid_value" })
          }
          if (input.completionWindow !== COMPLETION_WINDOW) {
            const message = `completion_window: only '${COMPLETION_WINDOW}' is offered`
            return yield* new BatchInvalid({ message, param: "completion_window", line: null, code: "invalid_value" })
          }
          const file = yield* getFile(input.key.accountId, input.inputFileId)
          if (file.purpose !== "batch") {
            const message = `input_file_id: the file's purpose is '${file.purpose}', not 'batch'`
            return yield* new BatchInvalid({ message, param: "input_file_id", line: null, code: "invalid_value" })
          }
          const content = yield* Effect.flatMap(store.fileContent(input.key.accountId, file.id), (text) =>
            text === undefined ? Effect.fail(new FileNotFound({ fileId: file.id })) : Effect.succeed(text)
          )
          const lines = yield* checkBatchLines(services, input, endpoint, content)
          const next = yield* record({ ...input, endpoint, inputFileId: file.id }, lines, () => [], "batch_")
          return yield* get(input.key.accountId, next.batchId)
        })

        /** Records `BatchSubmitted` (with `files`, in the same transaction) and wakes the worker. */
        const record = Effect.fnUntraced(function* (
          input: Omit<SubmitBatch, "endpoint"> & { readonly endpoint: LineEndpoint },
          lines: ReadonlyArray<InputLine>,
          files: (at: Date) => ReadonlyArray<NewFile>,
          prefix: string
        ) {
          const at = yield* now
          const event: BatchSubmitted = {
            type: "BatchSubmitted",
            data: {
              batchId: `${prefix}${randomUUID().replaceAll("-", "")}`,
              accountId: input.key.accountId,
              key: {
                keyId: input.key.keyId,
                models: input.key.models,
                spendLimit: input.key.spendLimit === null ? null : formatMicros(input.key.spendLimit)
              },
              endpoint: input.endpoint,
              inputFileId: input.inputFileId,
              completionWindow: input.completionWindow,
              customIds: lines.map((line) => line.customId),
              metadata: input.metadata,
              requestId: input.requestId,
              expiresAt: new Date(at.getTime() + WINDOW_MILLIS).toISOString(),
              at: at.toISOString(),
              outputExpiresAfterSeconds: input.outputExpiresAfterSeconds ?? null
            }
          }
          const next = evolve(undefined, event) as BatchState
          yield* store.append(undefined, [event], next, files(at), at).pipe(
            // A fresh id cannot collide: a conflict here is a bug.
            Effect.catchTag("StreamVersionConflict", (error) => Effect.die(error))
          )
          yield* Queue.offer(kicks, undefined)
          return next
        })

        /**
         * A message batch: every request planned as `POST /v1/messages` plans it (the first refusal names its index
         * and field); its requests are kept as the batch's input file, in the line format the worker reads.
         */
        const submitMessages = Effect.fnUntraced(function* (input: SubmitMessages) {
          yield* checkMessageRequests(services, input)
          const lines = input.requests.map((r, line) => ({ line, customId: r.customId, body: r.params }))
          const content = lines
            .map((l) => JSON.stringify({ custom_id: l.customId, method: "POST", url: MESSAGES_ENDPOINT, body: l.body }))
            .join("\n")
          const inputFileId = `file-${randomUUID().replaceAll("-", "")}`
          const files = (at: Date): ReadonlyArray<NewFile> => [
            {
              id: inputFileId,
              accountId: input.key.accountId,
              purpose: MESSAGE_BATCH_PURPOSE,
              filename: "requests.jsonl",
              content,
              at,
              // The gateway's own copy of the requests: it goes with its batch (deleted with it), not by age.
              expiresAt: null
            }
          ]
          const batch = { ...input, endpoint: MESSAGES_ENDPOINT, inputFileId, completionWindow: COMPLETION_WINDOW }
          return yield* record({ ...batch, metadata: null }, lines, files, "msgbatch_")
        })

        /** Records the cancellation at the batch's latest version (another writer moving it: read again). */
        const cancel = Effect.fnUntraced(function* (accountId: string, id: string) {
          yield* get(accountId, id)
          const recorded = yield* commits.record(id, (at) => ({ type: "Cancel", at }), commits.plainAppend)
          if (recorded._tag === "Gone") return yield* new BatchNotFound({ batchId: id })
          if (recorded._tag === "Refused") {
            return yield* new BatchNotCancellable({ batchId: id, status: recorded.state.status })
          }
          yield* Queue.offer(kicks, undefined)
          return yield* get(accountId, id)
        })

        const tallies = makeLineTallies()
        const { runDue } = yield* makeBatchWorker({
          store,
          services,
          options,
          workerId,
          kicks,
          keys: yield* Keys,
          lineFinished: tallies.count,
          ended: alertWhenEnded(store, yield* Alerts),
          fileExpiry,
          vendor: Option.getOrUndefined(yield* Effect.serviceOption(VendorBatches))
        })

        return Batches.of({
          createFile: Effect.fnUntraced(function* (accountId, file) {
            const id = `file-${randomUUID().replaceAll("-", "")}`
            const { expiresAfterSeconds, ...upload } = file
            const at = yield* now
            yield* store.createFile({ id, accountId, ...upload, at, expiresAt: fileExpiry(at, expiresAfterSeconds) })
            return yield* Effect.map(store.findFile(accountId, id), (row) => row as FileRow)
          }),
          getFile,
          fileContent: (accountId, id) =>
            Effect.flatMap(Effect.andThen(getFile(accountId, id), store.fileContent(accountId, id)), (text) =>
              text === undefined ? Effect.fail(new FileNotFound({ fileId: id })) : Effect.succeed(text)
            ),
          listFiles: (accountId, page) =>
            Effect.map(
              Effect.flatMap(now, (at) => store.listFiles(accountId, { ...page, now: at })),
              (rows) => paged(rows, page.limit)
            ),
          deleteFile: (accountId, id) =>
            Effect.flatMap(Effect.andThen(getFile(accountId, id), store.deleteFile(accountId, id)), (deleted) =>
              deleted ? Effect.void : Effect.fail(new FileNotFound({ fileId: id }))
            ),
          submit,
          submitMessages,
          get,
          state: (accountId, id) =>
            Effect.flatMap(store.load(id), (state) =>
              state === undefined || state.accountId !== accountId || state.deleted
                ? Effect.fail(new BatchNotFound({ batchId: id }))
                : Effect.succeed(state)
            ),
          list: (accountId, page) => Effect.map(store.list(accountId, page), (rows) => paged(rows, page.limit)),
          cancel,
          delete: Effect.fnUntraced(function* (accountId, id) {
            yield* get(accountId, id)
            const recorded = yield* commits.record(id, (at) => ({ type: "Delete", at }), commits.plainAppend)
            if (recorded._tag === "Gone") return yield* new BatchNotFound({ batchId: id })
            if (recorded._tag === "Refused") {
              if (recorded.state.deleted) return yield* new BatchNotFound({ batchId: id })
              return yield* new BatchNotDeletable({ batchId: id, status: recorded.state.status })
            }
          }),
          runDue,
          workerId,
          lineStats: tallies.snapshot
        })
      })
    )
}
