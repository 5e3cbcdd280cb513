/**
 * The batch decider's rules (BatchJob.ts, rules 1–9), checked over random command sequences: whatever a worker,
 * a racing second worker, a restart or a client's cancel sends in whatever order, the state the events fold to keeps
 * every rule.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  type BatchCommand,
  type BatchEvent,
  type BatchState,
  decide,
  evolve,
  fold,
  isFinished,
  type LineResult
} from "../../../src/domain/batch/BatchJob.ts"
import { readBatchInput } from "../../../src/domain/batch/BatchInput.ts"

const T0 = Date.parse("2026-01-01T00:00:00.000Z")
const iso = (ms: number) => new Date(T0 + ms).toISOString()
const DAY = 86_400_000

const submitted = (lines: number): BatchEvent => ({
  type: "BatchSubmitted",
  data: {
    batchId: "batch_1",
    accountId: "00000000-0000-0000-0000-000000000001",
    key: { keyId: "00000000-0000-0000-0000-000000000002", models: null, spendLimit: null },
    endpoint: "/v1/chat/completions",
    inputFileId: "file-1",
    completionWindow: "24h",
    customIds: Array.from({ length: lines }, (_, i) => `c${i}`),
    metadata: null,
    requestId: null,
    expiresAt: iso(DAY),
    at: iso(0)
  }
})

const result = (line: number, outcome: LineResult["outcome"], cost: number): LineResult => ({
  line,
  customId: `c${line}`,
  outcome,
  holdId: null,
  cost: `0.${String(cost).padStart(6, "0")}`,
  requestId: `batch_1/${line}`,
  response: outcome === "succeeded" ? { statusCode: 200, body: {} } : null,
  error: outcome === "succeeded" ? null : { code: "x", message: "x" }
})

const command = (lines: number): fc.Arbitrary<(at: string) => BatchCommand> =>
  fc.oneof(
    fc.constant((at: string) => ({ type: "Start", at }) as BatchCommand),
    fc
      .tuple(fc.integer({ min: -1, max: lines }), fc.constantFrom("succeeded", "failed", "cancelled"), fc.nat(999))
      .map(([line, outcome, cost]) => (at: string) => ({
        type: "FinishLine" as const,
        result: result(line, outcome as LineResult["outcome"], cost),
        at
      })),
    fc.constant((at: string) => ({ type: "Cancel", at }) as BatchCommand),
    fc.integer({ min: -1, max: lines }).map((line) => (at: string) => ({
      type: "StartLine" as const,
      line,
      holdId: `hold-${line}`,
      at
    })),
    // Vendor groups (VendorGroups.ts): two tags, so a group is sometimes recorded or accepted again.
    fc
      .tuple(fc.constantFrom("g1", "g2"), fc.uniqueArray(fc.integer({ min: 0, max: lines - 1 }), { maxLength: lines }))
      .map(([tag, groupLines]) => (at: string) => ({
        type: "VendorSubmit" as const,
        tag,
        upstream: "vendor",
        lines: groupLines,
        at
      })),
    fc
      .tuple(fc.constantFrom("g1", "g2"), fc.constantFrom("vb_1", "vb_2"))
      .map(([tag, vendorBatchId]) => (at: string) => ({ type: "VendorAccept" as const, tag, vendorBatchId, at })),
    fc.constant((at: string) => ({ type: "Finalize", at }) as BatchCommand),
    fc.constant((at: string) => ({ type: "Delete", at }) as BatchCommand),
    fc.constantFrom("completed", "failed", "expired", "cancelled").map((ending) => (at: string) => ({
      type: "End" as const,
      ending: ending as "completed",
      outputFileId: null,
      errorFileId: null,
      message: null,
      at
    }))
  )

const scenario = fc.integer({ min: 1, max: 6 }).chain((lines) =>
  fc.record({
    lines: fc.constant(lines),
    steps: fc.array(fc.tuple(command(lines), fc.integer({ min: 0, max: 2 * DAY })), { maxLength: 40 })
  })
)

/** Runs the steps (each at its own instant), checking the rules after each; returns every event appended. */
const run = (lines: number, steps: ReadonlyArray<readonly [(at: string) => BatchCommand, number]>) => {
  const events: Array<BatchEvent> = [submitted(lines)]
  let state = fold(events) as BatchState
  for (const [make, ms] of steps) {
    const cmd = make(iso(ms))
    const before = state
    const decision = decide(state, cmd)
    if (decision._tag === "Rejected") continue
    events.push(...decision.events)
    state = decision.events.reduce<BatchState | undefined>(evolve, state) as BatchState
    // 2. nothing moves a finished batch (but its deletion), and 9. nothing moves a deleted one
    assert.isFalse(isFinished(before.status) && decision.events.some((e) => e.type !== "BatchDeleted"))
    assert.isFalse(before.deleted)
    for (const event of decision.events) {
      if (event.type === "BatchLineFinished") {
        // 1. a line finishes once, and only a line of the file
        assert.isFalse(before.lines.has(event.data.line))
        assert.isTrue(event.data.line >= 0 && event.data.line < lines)
        // 3. only while the batch runs
        assert.include(["in_progress", "cancelling"], before.status)
      }
      if (event.type === "BatchEnded") {
        // 4. completion only through finalizing, with every line finished
        if (event.data.ending === "completed") {
          assert.strictEqual(before.status, "finalizing")
          assert.strictEqual(before.lines.size, lines)
        }
        // 6. expiry only at or after the expiry
        if (event.data.ending === "expired") assert.isAtLeast(ms, DAY)
      }
      // 5. a cancellation only before finalizing
      if (event.type === "BatchCancelRequested") assert.include(["validating", "in_progress"], before.status)
      if (event.type === "BatchFinalizing") assert.strictEqual(before.lines.size, lines)
      // 9. a deletion only once finished
      if (event.type === "BatchDeleted") assert.isTrue(isFinished(before.status))
      // 8. a line starts once, only in progress
      if (event.type === "BatchLineStarted") {
        assert.isFalse(before.started.has(event.data.line))
        assert.strictEqual(before.status, "in_progress")
      }
      // VendorGroups.ts: a group only of held, unfinished lines in no other group, once, only in progress
      if (event.type === "BatchVendorSubmitting") {
        assert.strictEqual(before.status, "in_progress")
        assert.isFalse(before.vendor.has(event.data.tag))
        const taken = new Set([...before.vendor.values()].flatMap((group) => group.lines))
        for (const line of event.data.lines) {
          assert.isTrue(before.started.has(line) && !before.lines.has(line) && !taken.has(line))
        }
      }
      // …and its vendor id recorded once
      if (event.type === "BatchVendorAccepted")
        assert.strictEqual(before.vendor.get(event.data.tag)?.vendorBatchId, null)
    }
    // 7. the counts are those of the finished lines
    const finished = [...state.lines.values()]
    assert.strictEqual(state.succeeded, finished.filter((r) => r.outcome === "succeeded").length)
    assert.strictEqual(state.failed, finished.filter((r) => r.outcome !== "succeeded").length)
    assert.strictEqual(state.succeeded + state.failed, state.lines.size)
    assert.isAtMost(state.lines.size, lines)
  }
  return { events, state }
}

describe("BatchJob decider", () => {
  it("keeps every rule over any sequence of commands", () => {
    fc.assert(
      fc.property(scenario, ({ lines, steps }) => void run(lines, steps)),
      { numRuns: 500 }
    )
  })

  it("replays: the fold of the appended events is the state the decisions built", () => {
    fc.assert(
      fc.property(scenario, ({ lines, steps }) => {
        const { events, state } = run(lines, steps)
        const replayed = fold(events) as BatchState
        assert.deepStrictEqual({ ...replayed, lines: [...replayed.lines] }, { ...state, lines: [...state.lines] })
        // The cost is the sum of the lines' costs, to the micro-dollar.
        const sum = [...state.lines.values()].reduce((total, r) => total + BigInt(r.cost.replace(".", "")), 0n)
        assert.strictEqual(state.cost, sum)
      }),
      { numRuns: 300 }
    )
  })

  it("runs the happy path to completed, and a second result for a line is refused", () => {
    const { state } = run(2, [
      [(at) => ({ type: "Start", at }), 1],
      [(at) => ({ type: "FinishLine", result: result(0, "succeeded", 10), at }), 2],
      [(at) => ({ type: "FinishLine", result: result(0, "succeeded", 10), at }), 3],
      [(at) => ({ type: "FinishLine", result: result(1, "failed", 0), at }), 4],
      [(at) => ({ type: "Finalize", at }), 5],
      [(at) => ({ type: "End", ending: "completed", outputFileId: "f", errorFileId: null, message: null, at }), 6]
    ])
    assert.strictEqual(state.status, "completed")
    assert.strictEqual(state.succeeded, 1)
    assert.strictEqual(state.failed, 1)
    assert.strictEqual(state.cost, 10n)
    assert.deepStrictEqual(decide(state, { type: "Cancel", at: iso(7) }), {
      _tag: "Rejected",
      rejection: { _tag: "BatchFinished", status: "completed" }
    })
  })
})

describe("BatchInput", () => {
  const line = (customId: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ custom_id: customId, method: "POST", url: "/v1/chat/completions", body: { model: "m" }, ...extra })

  it("reads the requests in order, skipping blank lines", () => {
    const read = readBatchInput(`${line("a")}\n\n${line("b")}\n`, "/v1/chat/completions")
    assert.deepStrictEqual(Array.isArray(read) ? read.map((r) => [r.line, r.customId]) : read, [
      [0, "a"],
      [1, "b"]
    ])
  })

  it("names the file line and field of the first problem", () => {
    const cases: ReadonlyArray<readonly [string, number | null, string]> = [
      [`${line("a")}\n{not json`, 2, ""],
      [`${line("a")}\n${line("a")}`, 2, "custom_id"],
      [`${line("a")}\n\n${line(7)}`, 3, "custom_id"],
      [line("a", { method: "GET" }), 1, "method"],
      [line("a", { url: "/v1/embeddings" }), 1, "url"],
      [line("a", { body: [] }), 1, "body"],
      [line("a", { body: { model: "m", stream: true } }), 1, "body.stream"],
      ["\n\n", null, "input_file_id"]
    ]
    for (const [content, at, param] of cases) {
      const read = readBatchInput(content, "/v1/chat/completions")
      if (!("_tag" in read)) assert.fail(`expected a problem for ${content}`)
      else assert.deepStrictEqual([read.line, read.param], [at, param])
    }
  })
})
