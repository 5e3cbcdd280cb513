/**
 * The simulator's vendor batches: OpenAI's files and batches, Anthropic's message batches, one store per simulator
 * instance. Each request of a batch is answered at submit by the interactive handler of its endpoint
 * (`chatCompletions`, `createEmbeddings`, `createMessage`), so its usage is what the interactive call would report;
 * the batch shows `in_progress` until `batchMillis` after its submit, then its results. A request whose body carries the marker
 * `[sim:batch-line-error]` fails (the fault knob for one line). This is the simulator's edge for batches: it reads the
 * wall clock (`Date.now`), as the video tasks do.
 */
import { createMessage } from "../AnthropicMessages.ts"
import type { CacheKnobs } from "../PromptCache.ts"
import { chatCompletions } from "../OpenAIChat.ts"
import { createEmbeddings, EMBEDDINGS_PATH } from "../audio/OpenAIEmbeddings.ts"
import type { AsyncReply } from "../audio/AudioReply.ts"
import type { SimContext, SimReply, SimRequest } from "../SimResponse.ts"

export const DEFAULT_BATCH_MILLIS = 2_000
export const BATCH_LINE_ERROR_MARKER = "[sim:batch-line-error]"
const MAX_ITEMS = 10_000

export type LineOutcome =
  | { readonly _tag: "Answered"; readonly status: number; readonly body: unknown }
  | { readonly _tag: "Pending" }

export interface BatchLine {
  readonly customId: string
  readonly outcome: { current: LineOutcome }
}

export interface VendorBatch {
  readonly id: string
  readonly api: "openai" | "anthropic"
  readonly createdAtMs: number
  readonly lines: ReadonlyArray<BatchLine>
  readonly metadata: Readonly<Record<string, string>> | null
  readonly inputFileId: string | null
  readonly endpoint: string
  /** Mutable: set once by a cancel, and the files once written. */
  readonly state: { cancelledAtMs: number | undefined; outputFileId: string | null; errorFileId: string | null }
}

export interface SimFile {
  readonly id: string
  readonly filename: string
  readonly purpose: string
  readonly content: string
  readonly createdAtMs: number
}

export type BatchPhase =
  | { readonly _tag: "InProgress" }
  | { readonly _tag: "Ended"; readonly atMs: number; readonly cancelled: boolean }

const failedLine = (api: "openai" | "anthropic"): LineOutcome => ({
  _tag: "Answered",
  status: 500,
  body:
    api === "openai"
      ? { error: { message: "the simulator failed this batch request on purpose", type: "server_error", code: null } }
      : { type: "error", error: { type: "api_error", message: "the simulator failed this batch request on purpose" } }
})

export const makeVendorBatchJobs = (options: { readonly batchMillis: number }) => {
  const files = new Map<string, SimFile>()
  const batches = new Map<string, VendorBatch>()
  let counter = 0
  const nextId = (prefix: string) => {
    counter += 1
    return `${prefix}${Date.now().toString(36)}${counter.toString(36).padStart(6, "0")}`
  }
  const trim = <A>(map: Map<string, A>) => {
    if (map.size <= MAX_ITEMS) return
    const oldest = map.keys().next().value
    if (oldest !== undefined) map.delete(oldest)
  }

  /** One request answered as its interactive endpoint answers it (an async handler's reply lands when ready). */
  const answer = (
    api: "openai" | "anthropic",
    endpoint: string,
    body: unknown,
    request: SimRequest,
    context: SimContext,
    cache: CacheKnobs
  ): { current: LineOutcome } => {
    const outcome: { current: LineOutcome } = { current: { _tag: "Pending" } }
    if (JSON.stringify(body).includes(BATCH_LINE_ERROR_MARKER)) {
      outcome.current = failedLine(api)
      return outcome
    }
    const lineRequest: SimRequest = { ...request, method: "POST", body, bodyInvalid: false }
    const reply: SimReply | AsyncReply =
      api === "anthropic"
        ? createMessage({ ...lineRequest, path: "/v1/messages" }, context, context.replyTokens, cache)
        : endpoint === EMBEDDINGS_PATH
          ? createEmbeddings({ ...lineRequest, path: EMBEDDINGS_PATH }, context)
          : chatCompletions({ ...lineRequest, path: "/v1/chat/completions" }, context, context.replyTokens, cache)
    const settle = (settled: unknown) => {
      const json = settled as { _tag: string; status?: number; body?: unknown }
      outcome.current =
        json._tag === "Json" ? { _tag: "Answered", status: json.status ?? 500, body: json.body } : failedLine(api)
    }
    if (reply._tag === "Async") reply.run().then(settle, () => settle({ _tag: "Failed" }))
    else settle(reply)
    return outcome
  }

  return {
    batchMillis: options.batchMillis,
    addFile: (file: Omit<SimFile, "id" | "createdAtMs">): SimFile => {
      const stored = { ...file, id: nextId("file-sim"), createdAtMs: Date.now() }
      files.set(stored.id, stored)
      trim(files)
      return stored
    },
    file: (id: string) => files.get(id),
    submit: (
      api: "openai" | "anthropic",
      requests: ReadonlyArray<{ readonly customId: string; readonly body: unknown }>,
      extra: {
        readonly metadata: Readonly<Record<string, string>> | null
        readonly inputFileId: string | null
        readonly endpoint: string
      },
      request: SimRequest,
      context: SimContext,
      cache: CacheKnobs
    ): VendorBatch => {
      // Answered first: the batch's time runs from when the simulator has it (the first answer may load a tokenizer).
      const lines = requests.map((line) => ({
        customId: line.customId,
        outcome: answer(api, extra.endpoint, line.body, request, context, cache)
      }))
      const batch: VendorBatch = {
        id: nextId(api === "openai" ? "batch_sim" : "msgbatch_sim"),
        api,
        createdAtMs: Date.now(),
        lines,
        ...extra,
        state: { cancelledAtMs: undefined, outputFileId: null, errorFileId: null }
      }
      batches.set(batch.id, batch)
      trim(batches)
      return batch
    },
    batch: (id: string) => batches.get(id),
    list: (api: "openai" | "anthropic") => [...batches.values()].filter((batch) => batch.api === api).reverse(),
    phaseOf: (batch: VendorBatch, nowMs = Date.now()): BatchPhase => {
      if (batch.state.cancelledAtMs !== undefined) {
        return { _tag: "Ended", atMs: batch.state.cancelledAtMs, cancelled: true }
      }
      const endMs = batch.createdAtMs + options.batchMillis
      const answered = batch.lines.every((line) => line.outcome.current._tag === "Answered")
      return nowMs >= endMs && answered ? { _tag: "Ended", atMs: endMs, cancelled: false } : { _tag: "InProgress" }
    },
    cancel: (batch: VendorBatch) => {
      batch.state.cancelledAtMs ??= Date.now()
    }
  }
}

export type VendorBatchJobs = ReturnType<typeof makeVendorBatchJobs>
