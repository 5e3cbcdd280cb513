/**
 * Where batches and their files are kept, as a port: the files (per account), each batch's event stream and read
 * model, and the worker leases that let several instances share batches without running one twice at once.
 * `app/batch/Batches.ts` decides; `adapters/store/PgBatches.ts` keeps.
 */
import { Context, type Effect } from "effect"
import type { BatchEvent, BatchState } from "../../domain/batch/BatchJob.ts"
import type { StoreUnavailable, StreamVersionConflict } from "../StoreErrors.ts"
import type { Companion } from "./LedgerWriter.ts"

/** A stored file as OpenAI's file object shows it (without its content). */
export interface FileRow {
  readonly id: string
  readonly account_id: string
  readonly purpose: string
  readonly filename: string
  readonly bytes: number
  readonly created_at: Date
  /** When the retention sweep deletes it; null: kept until deleted. */
  readonly expires_at: Date | null
}

export interface NewFile {
  readonly id: string
  readonly accountId: string
  readonly purpose: string
  readonly filename: string
  readonly content: string
  readonly at: Date
  readonly expiresAt: Date | null
}

/** One batch as clients see it. */
export interface BatchRow {
  readonly id: string
  readonly account_id: string
  /** The key that submitted it. */
  readonly key_id: string | null
  readonly endpoint: string
  readonly input_file_id: string
  readonly status: string
  readonly total: number
  readonly completed: number
  readonly failed: number
  readonly cost: string
  readonly metadata: Record<string, string> | null
  readonly output_file_id: string | null
  readonly error_file_id: string | null
  readonly errors: { readonly message: string } | null
  readonly created_at: Date
  readonly expires_at: Date
  readonly in_progress_at: Date | null
  readonly finalizing_at: Date | null
  readonly completed_at: Date | null
  readonly failed_at: Date | null
  readonly expired_at: Date | null
  readonly cancelling_at: Date | null
  readonly cancelled_at: Date | null
}

export interface Page {
  readonly limit: number
  readonly after: string | undefined
}

/** A page of batches: `before` (newer than that batch, nearest first) and which endpoints the surface shows. */
export interface BatchPage extends Page {
  readonly before?: string | undefined
  /** Only batches of this endpoint (`is`), or all but this one (`not`). */
  readonly endpoint?: { readonly is: string } | { readonly not: string }
}

/** A page of every account's batches for the operator, newest first: one account's, or one status's. */
export interface OperatorBatchPage extends Page {
  readonly accountId: string | undefined
  readonly status: string | undefined
}

/** What a batch's line holds amount to, in micro-dollars: still held, captured, and refunded on resolution. */
export interface BatchMoney {
  readonly held: bigint
  readonly captured: bigint
  readonly refunded: bigint
}

export class BatchStore extends Context.Service<
  BatchStore,
  {
    readonly createFile: (file: NewFile) => Effect.Effect<void, StoreUnavailable>
    readonly findFile: (accountId: string, fileId: string) => Effect.Effect<FileRow | undefined, StoreUnavailable>
    readonly fileContent: (accountId: string, fileId: string) => Effect.Effect<string | undefined, StoreUnavailable>
    /** A page of an account's files not expired at `now`, newest first, one row more than `limit`; `purpose` filters. */
    readonly listFiles: (
      accountId: string,
      page: Page & { readonly purpose: string | undefined; readonly now: Date }
    ) => Effect.Effect<ReadonlyArray<FileRow>, StoreUnavailable>
    /** Deletes a file; false when the account has no such file. */
    readonly deleteFile: (accountId: string, fileId: string) => Effect.Effect<boolean, StoreUnavailable>
    /** Deletes every file expired at `now` but the input file of a batch still running; how many went. */
    readonly deleteExpiredFiles: (now: Date) => Effect.Effect<number, StoreUnavailable>
    readonly load: (batchId: string) => Effect.Effect<BatchState | undefined, StoreUnavailable>
    /**
     * Appends `events` at `state`'s version (a new stream when `state` is undefined), writes the read model of `next`
     * and inserts `files`, in one transaction.
     */
    readonly append: (
      state: BatchState | undefined,
      events: ReadonlyArray<BatchEvent>,
      next: BatchState,
      files: ReadonlyArray<NewFile>,
      at: Date
    ) => Effect.Effect<void, StoreUnavailable | StreamVersionConflict>
    /** The read-model write of `next`, to join a ledger batch as a companion. */
    readonly projection: (next: BatchState) => Companion["projection"]
    readonly find: (accountId: string, batchId: string) => Effect.Effect<BatchRow | undefined, StoreUnavailable>
    /**
     * A page of an account's batches, newest first, one row more than `limit`. With `before`, the rows newer than
     * that batch nearest it first (the caller reverses them).
     */
    readonly list: (accountId: string, page: BatchPage) => Effect.Effect<ReadonlyArray<BatchRow>, StoreUnavailable>
    /** A batch of any account (the operator's view). */
    readonly findAny: (batchId: string) => Effect.Effect<BatchRow | undefined, StoreUnavailable>
    /** A page of all accounts' batches, newest first, one row more than `limit`. */
    readonly listAll: (page: OperatorBatchPage) => Effect.Effect<ReadonlyArray<BatchRow>, StoreUnavailable>
    /** The sums of the holds `holdIds` of an account (a batch's line holds, by their ids). */
    readonly money: (accountId: string, holdIds: ReadonlyArray<string>) => Effect.Effect<BatchMoney, StoreUnavailable>
    /**
     * Takes up to `limit` unfinished batches whose lease is free, for `owner` until `until`. A lease `owner` holds
     * already is free to it: its worker claims at the start of a round, when it runs no batch, so such a lease is one
     * a failed round left behind (a commit the database did not take) and the batch is taken again at once.
     */
    readonly claimDue: (
      owner: string,
      now: Date,
      until: Date,
      limit: number
    ) => Effect.Effect<ReadonlyArray<string>, StoreUnavailable>
    /** Keeps the batch's lease for `owner` until `until`; false when another worker took it over. */
    readonly keepLease: (batchId: string, owner: string, until: Date) => Effect.Effect<boolean, StoreUnavailable>
    readonly dropLease: (batchId: string) => Effect.Effect<void, StoreUnavailable>
  }
>()("tollgate/app/ports/BatchStore") {}
