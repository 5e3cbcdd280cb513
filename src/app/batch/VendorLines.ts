/**
 * Batch lines sent to a vendor's own batch API: a line whose model is served by an upstream the operator marked
 * `batch: true` (OpenAI or Anthropic; which lines, VendorTargets.ts decides) goes there, in a vendor batch of its own
 * batch's lines for that upstream, instead of being run by the gateway. Each line is planned as the gateway-run line is (LinePlans.ts: the model, the key, the
 * conversion, the estimate at batch prices) and its hold placed (`BatchLineStarted`) before the group is recorded
 * (`BatchVendorSubmitting`, domain/batch/VendorGroups.ts) and then submitted under the group's tag; the vendor's id is
 * recorded (`BatchVendorAccepted`) before the group is polled. A run that stops in between looks for the tag at the
 * vendor first (plugins/text/VendorBatchClient.ts `find`) and submits only when it is not there. Each vendor result is
 * delivered as the interactive call's reply would be (`vendor.deliver`: read, priced at batch prices, encoded in the
 * client's protocol) and commits with its hold's settlement; an errored, expired or cancelled one with its release.
 */
import { Clock, Effect, Semaphore } from "effect"
import { randomUUID } from "node:crypto"
import type { InputLine, LineEndpoint } from "../../domain/batch/BatchInput.ts"
import { type BatchState, pendingLines } from "../../domain/batch/BatchJob.ts"
import { openGroups, type VendorGroup, vendorLines } from "../../domain/batch/VendorGroups.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { ModelConfig, UpstreamConfig } from "../OperatorConfig.ts"
import type { VendorBatches, VendorLine, VendorLineResult } from "../ports/VendorBatches.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import type { makeCommits } from "./BatchCommits.ts"
import { type Commit, countingTokens, failedLine } from "./BatchLineRun.ts"
import { finishLine } from "./VendorResults.ts"
import { type VendorTarget, vendorTargetOf } from "./VendorTargets.ts"
import { lineHoldId, lineRequestId } from "./BatchOutput.ts"
import { type LinePlan, type LineServices, planLine } from "./LinePlans.ts"

/** Lines one round puts into vendor batches, per client batch (the rest wait for the next round). */
const MAX_LINES_PER_ROUND = 1_000

export interface VendorContext {
  readonly vendor: VendorBatches["Service"] | undefined
  readonly models: ReadonlyArray<ModelConfig>
  readonly services: LineServices
  readonly commits: ReturnType<typeof makeCommits>
  /** How often one group is polled. */
  readonly pollMillis: number
  /** Keeps the worker's claim while a long step runs. */
  readonly keepLease: (batchId: string) => Effect.Effect<boolean, StoreUnavailable>
  readonly load: (batchId: string) => Effect.Effect<BatchState | undefined, StoreUnavailable>
  /** Counts a settled line's tokens towards its key's `tpm`, as a gateway-run line's are (BatchChunk.ts). */
  readonly recordTokens: (keyId: string, tokens: number) => Effect.Effect<void>
}

/** What the gateway runs itself this round, and whether vendor batches are still out. */
export interface VendorStep {
  readonly gatewayLines: ReadonlyArray<number>
  readonly open: boolean
}

const UNPLANNABLE: VendorLineResult = { _tag: "Errored", status: 400, message: "the request can no longer be planned" }

/**
 * A line's custom id at the vendor: its group's tag (random, unique) and its line, so a vendor batch's results can
 * only ever match the lines of the group that sent it, whichever batch a lookup took for it (Anthropic's `find`).
 */
const vendorId = (tag: string, line: number) => `${tag}-${line}`

/** One round of a batch's vendor lines: the batch as last read, its key, its input lines, and how a line commits. */
interface Round {
  readonly state: BatchState
  readonly key: AuthenticatedKey
  readonly inputs: ReadonlyArray<InputLine>
  readonly commit: Commit
  /** Orders the round's line starts and finishes (BatchCommits.ts). */
  readonly lock: Semaphore.Semaphore
}

export const makeVendorLines = (context: VendorContext) => {
  const { vendor, commits, services } = context
  const lastPoll = new Map<string, number>()
  const cancelSent = new Set<string>()
  /** Groups this run recorded and has not yet sent: nothing of them can be at the vendor, so nothing is looked for. */
  const unsent = new Set<string>()
  const upstreamNamed = (name: string) =>
    context.models.flatMap((model) => model.upstreams).find((upstream) => upstream.name === name)

  const targetOf = (state: BatchState, input: InputLine | undefined) =>
    vendor === undefined || input === undefined
      ? undefined
      : vendorTargetOf(context.models, state.endpoint as LineEndpoint, input.body.model)

  const plan = (state: BatchState, key: AuthenticatedKey, input: InputLine) =>
    planLine(services, state.endpoint as LineEndpoint, key, input.body, lineRequestId(state.batchId, input.line))

  /** The group's lines as the vendor takes them; lines that can no longer be planned end failed, released. */
  const vendorLinesOf = ({ state, key, inputs, commit }: Round, group: VendorGroup, target: VendorTarget) =>
    Effect.gen(function* () {
      const out: Array<VendorLine> = []
      for (const line of group.lines) {
        const input = inputs[line]
        if (input === undefined || state.lines.has(line)) continue
        const planned = yield* plan(state, key, input)
        if (planned._tag === "Failure") {
          yield* finishLine(services, state, key, input, UNPLANNABLE, commit)
          continue
        }
        out.push({
          customId: vendorId(group.tag, line),
          call: planned.success.vendor.call(target.upstream, target.upstreamModel)
        })
      }
      return out
    })

  /** Plans, holds and records new groups of the pending lines bound for a vendor. */
  const recordNewGroups = (round: Round) =>
    Effect.gen(function* () {
      const { state, key, inputs, commit } = round
      const grouped = vendorLines(state)
      const byUpstream = new Map<string, Array<number>>()
      const candidates = pendingLines(state)
        .filter((line) => !grouped.has(line) && targetOf(state, inputs[line]) !== undefined)
        .slice(0, MAX_LINES_PER_ROUND)
      for (const [n, line] of candidates.entries()) {
        if (n % 32 === 0 && !(yield* context.keepLease(state.batchId))) return
        const input = inputs[line] as InputLine
        const target = targetOf(state, input) as VendorTarget
        const planned = yield* plan(state, key, input)
        const refusal =
          planned._tag === "Failure"
            ? {
                status: planned.failure.status,
                error: { code: planned.failure.code, message: planned.failure.message }
              }
            : yield* startLine(round, input, planned.success, target)
        if (refusal === "started")
          byUpstream.set(target.upstream.name, [...(byUpstream.get(target.upstream.name) ?? []), line])
        else if (refusal !== "taken") {
          const base = { line, customId: input.customId, requestId: lineRequestId(state.batchId, line) }
          // Held by an earlier run that stopped before its group was recorded: its hold goes back.
          const holdId = state.started.get(line)
          yield* commit(
            failedLine(base, holdId ?? null, refusal.status, refusal.error),
            holdId === undefined ? { _tag: "None" } : { _tag: "Release", holdId, reason: "rejected" }
          )
        }
      }
      for (const [upstream, lines] of byUpstream) {
        const tag = `tg_${randomUUID().replaceAll("-", "")}`
        const recorded = yield* commits.record(
          state.batchId,
          (at) => ({ type: "VendorSubmit", tag, upstream, lines, at }),
          commits.plainAppend
        )
        if (recorded._tag === "Written") unsent.add(tag)
      }
    })

  /** Places the line's hold (unless an earlier run did); "taken" when another run started it first. */
  const startLine = ({ state, key, lock }: Round, input: InputLine, planned: LinePlan, target: VendorTarget) =>
    Effect.gen(function* () {
      const refused = vendor?.refusal(
        {
          customId: vendorId("refusal", input.line),
          call: planned.vendor.call(target.upstream, target.upstreamModel)
        },
        target.upstream
      )
      if (refused !== undefined) return { status: 400, error: { code: "invalid_request", message: refused } }
      if (state.started.has(input.line)) return "started" as const
      const started = yield* commits.start(state.batchId, lock)(input.line, {
        accountId: key.accountId,
        amount: planned.amount,
        keyId: key.keyId,
        keySpendLimit: key.spendLimit,
        model: planned.modelId,
        plugin: planned.pluginId,
        requestId: lineRequestId(state.batchId, input.line),
        holdId: lineHoldId(state.batchId, input.line),
        ttlSeconds: null
      })
      if (started === "started" || started === "taken") return started
      return { status: 402, error: { code: "insufficient_quota", message: started.message } }
    })

  /** One group: submitted (or found) and recorded, polled, its results committed. True while it is still out. */
  const advanceGroup = (round: Round, group: VendorGroup) =>
    Effect.gen(function* () {
      const { state } = round
      const upstream = upstreamNamed(group.upstream)
      if (vendor === undefined || upstream === undefined) {
        // The operator took the upstream (or its batch API) out of the config: its lines can no longer be read back.
        const gone: VendorLineResult = { _tag: "Errored", status: 502, message: "its vendor upstream is gone" }
        return yield* Effect.as(finishAll(round, group, gone), false)
      }
      // A group's vendor calls (its submission, a retry of one that failed, a poll) at most once per `pollMillis`;
      // a cancellation goes at once (and is polled with it).
      const nowMs = yield* Clock.currentTimeMillis
      const last = lastPoll.get(group.tag)
      const cancelDue =
        state.status !== "in_progress" && group.vendorBatchId !== null && !cancelSent.has(group.vendorBatchId)
      if (!cancelDue && last !== undefined && nowMs - last < context.pollMillis) return true
      lastPoll.set(group.tag, nowMs)
      const vendorBatchId = yield* recordedId(round, group, upstream)
      if (vendorBatchId === undefined) return false
      if (group.vendorBatchId === null && state.status === "in_progress") return true
      if (state.status !== "in_progress" && !cancelSent.has(vendorBatchId)) {
        yield* vendor.cancel(upstream, vendorBatchId)
        cancelSent.add(vendorBatchId)
      }
      const polled = yield* vendor.poll(upstream, vendorBatchId)
      if (polled._tag === "Pending") return true
      yield* finishAll(round, group, polled.missing, polled.results)
      lastPoll.delete(group.tag)
      return false
    })

  /** Commits each unfinished line of the group: its result in `results`, else `missing`. */
  const finishAll = (
    { state, key, inputs, commit }: Round,
    group: VendorGroup,
    missing: VendorLineResult,
    results: ReadonlyMap<string, VendorLineResult> = new Map()
  ) =>
    Effect.forEach(
      group.lines,
      (line) => {
        const input = inputs[line]
        return input === undefined || state.lines.has(line)
          ? Effect.void
          : finishLine(services, state, key, input, results.get(vendorId(group.tag, line)) ?? missing, commit)
      },
      { discard: true }
    )

  /** The group's vendor batch id: recorded, found at the vendor, or from a submission now (then recorded). */
  const recordedId = (round: Round, group: VendorGroup, upstream: UpstreamConfig) =>
    Effect.gen(function* () {
      const { state } = round
      if (group.vendorBatchId !== null || vendor === undefined) return group.vendorBatchId ?? undefined
      const found = unsent.delete(group.tag)
        ? undefined
        : yield* vendor.find(upstream, group.tag, group.lines.length, new Date(group.submittingAt))
      // Cancelled before the vendor had it: nothing there to wait for (the batch's end releases the holds).
      if (found === undefined && state.status !== "in_progress") return undefined
      const submitted = found === undefined ? yield* Effect.result(submitGroup(round, group, upstream)) : undefined
      if (submitted?._tag === "Failure") {
        const failure = submitted.failure
        if (failure._tag !== "VendorBatchFailed" || !failure.refused) return yield* Effect.fail(failure)
        // The vendor will not take it (a 4xx): its lines end errored, their holds released, rather than wait a day.
        const refused = { _tag: "Errored", status: 400, message: failure.message } as const
        yield* finishAll(round, group, refused)
        return undefined
      }
      const id = found ?? submitted?.success
      if (id === undefined) return undefined
      yield* commits.record(
        state.batchId,
        (at) => ({ type: "VendorAccept", tag: group.tag, vendorBatchId: id, at }),
        commits.plainAppend
      )
      return id
    })

  const submitGroup = (round: Round, group: VendorGroup, upstream: UpstreamConfig) =>
    Effect.gen(function* () {
      const target = targetOf(round.state, round.inputs[group.lines[0] ?? -1])
      const lines = yield* vendorLinesOf(round, group, target ?? { upstream, upstreamModel: "" })
      if (lines.length === 0 || vendor === undefined) return undefined
      return yield* vendor.submit(upstream, group.tag, lines)
    })

  /**
   * Sends new lines to their vendors (while the batch is in progress), then advances every open group. A vendor that
   * cannot be reached is logged and asked again next round. With the batch cancelling (or failing), each vendor batch
   * is cancelled and polled until it ends, so what the vendor did finish is billed and the rest released.
   */
  const step = (state: BatchState, key: AuthenticatedKey, inputs: ReadonlyArray<InputLine>) =>
    Effect.gen(function* () {
      const lock = yield* Semaphore.make(1)
      const commit = countingTokens(commits.finish(state.batchId, lock), context.recordTokens, key.keyId)
      const round: Round = { state, key, inputs, commit, lock }
      let latest = state
      if (vendor !== undefined && state.status === "in_progress") {
        yield* recordNewGroups(round)
        latest = (yield* context.load(state.batchId)) ?? state
      }
      let open = false
      for (const group of openGroups(latest)) {
        const out = yield* advanceGroup({ ...round, state: latest }, group).pipe(
          Effect.catchTag("VendorBatchFailed", (error) =>
            Effect.as(Effect.logWarning("a vendor batch call failed", error.message), true)
          )
        )
        open = open || out
      }
      const grouped = vendorLines(latest)
      const gatewayLines = pendingLines(latest).filter(
        (line) => !grouped.has(line) && targetOf(latest, inputs[line]) === undefined
      )
      return { gatewayLines, open } satisfies VendorStep
    })

  /** Cancels the batch's vendor batches, best effort, when it ends without waiting for them (expired, failed). */
  const cancelAll = (state: BatchState) =>
    Effect.forEach(
      openGroups(state),
      (group) => {
        const upstream = upstreamNamed(group.upstream)
        return vendor === undefined || upstream === undefined || group.vendorBatchId === null
          ? Effect.void
          : vendor
              .cancel(upstream, group.vendorBatchId)
              .pipe(
                Effect.catchTag("VendorBatchFailed", (error) =>
                  Effect.logWarning("a vendor batch could not be cancelled", error.message)
                )
              )
      },
      { discard: true }
    )

  return { step, cancelAll }
}
