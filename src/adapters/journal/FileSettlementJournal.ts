/**
 * The settlement journal as a file of JSON lines in the data directory: `record` and `complete` lines appended and
 * flushed to disk (fdatasync) before they return, so an entry outlives a crash the moment the caller moves on. Read
 * once at start, folded (a `complete` cancels its hold's `record`) and rewritten with only what is still pending,
 * so the file stays as small as the backlog. Appends happen only when the database refused a commit: the cost of a
 * synchronous flush (~0.1 ms here) is paid on that path alone.
 */
import { Effect, Layer } from "effect"
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
  writeSync
} from "node:fs"
import { join } from "node:path"
import { JournalError, type PendingResolution, SettlementJournal } from "../../app/SettlementJournal.ts"
import type { RefundReason } from "../../domain/ledger/LedgerEvent.ts"

export const JOURNAL_FILE = "settlements.jsonl"

type Line =
  | {
      readonly op: "record"
      readonly holdId: string
      readonly accountId: string
      readonly kind: "settle" | "release"
      readonly cost?: string
      readonly usage?: unknown
      readonly reason?: RefundReason
      readonly decidedAt: string
    }
  | { readonly op: "complete"; readonly holdId: string }

const toLine = (entry: PendingResolution): Line =>
  entry.resolution.kind === "settle"
    ? {
        op: "record",
        holdId: entry.holdId,
        accountId: entry.accountId,
        kind: "settle",
        cost: entry.resolution.cost.toString(),
        usage: entry.resolution.usage,
        decidedAt: entry.decidedAt
      }
    : {
        op: "record",
        holdId: entry.holdId,
        accountId: entry.accountId,
        kind: "release",
        reason: entry.resolution.reason,
        decidedAt: entry.decidedAt
      }

const fromLine = (line: Extract<Line, { op: "record" }>): PendingResolution => ({
  holdId: line.holdId,
  accountId: line.accountId,
  decidedAt: line.decidedAt,
  resolution:
    line.kind === "settle"
      ? { kind: "settle", cost: BigInt(line.cost ?? "0"), usage: line.usage ?? null }
      : { kind: "release", reason: line.reason ?? "failed" }
})

/** The entries still pending in `text`; a line cut short by a crash (the last one) is skipped. */
export const foldJournal = (text: string): Map<string, PendingResolution> => {
  const pending = new Map<string, PendingResolution>()
  for (const raw of text.split("\n")) {
    if (raw.trim().length === 0) continue
    let line: Line
    // Edge: JSON.parse of a file another process may have cut mid-line.
    try {
      line = JSON.parse(raw) as Line
    } catch {
      continue
    }
    if (line.op === "complete") pending.delete(line.holdId)
    else if (line.op === "record") {
      pending.delete(line.holdId)
      pending.set(line.holdId, fromLine(line))
    }
  }
  return pending
}

const failure = (what: string) => (error: unknown) =>
  new JournalError({ message: `${what}: ${(error as { code?: string }).code ?? "failed"}` })

/** The journal in `directory` (created if missing). */
export const layer = (directory: string) =>
  Layer.effect(
    SettlementJournal,
    Effect.gen(function* () {
      const path = join(directory, JOURNAL_FILE)
      // Edge: node:fs, synchronous on purpose — at start, and on a path where the flush is the point.
      const pending = yield* Effect.try({
        try: () => {
          mkdirSync(directory, { recursive: true })
          const text = existsSync(path) ? readFileSync(path, "utf8") : ""
          const pending = foldJournal(text)
          const compacted = [...pending.values()].map((entry) => `${JSON.stringify(toLine(entry))}\n`).join("")
          writeFileSync(`${path}.tmp`, compacted, { mode: 0o600 })
          renameSync(`${path}.tmp`, path)
          return pending
        },
        catch: failure(`the settlement journal ${path} could not be read`)
      })
      const fd = yield* Effect.acquireRelease(
        Effect.try({
          try: () => openSync(path, "a", 0o600),
          catch: failure("the settlement journal could not be opened")
        }),
        (fd) => Effect.sync(() => closeSync(fd))
      )
      const append = (line: Line) =>
        Effect.try({
          try: () => {
            writeSync(fd, `${JSON.stringify(line)}\n`)
            fdatasyncSync(fd)
          },
          catch: failure("the settlement journal could not be written")
        })
      return SettlementJournal.of({
        record: (entry) =>
          Effect.tap(append(toLine(entry)), () =>
            Effect.sync(() => {
              pending.delete(entry.holdId)
              pending.set(entry.holdId, entry)
            })
          ),
        complete: (holdId) =>
          pending.has(holdId)
            ? Effect.tap(append({ op: "complete", holdId }), () =>
                Effect.sync(() => {
                  pending.delete(holdId)
                })
              )
            : Effect.void,
        pending: Effect.sync(() => [...pending.values()]),
        durable: true
      })
    })
  )
