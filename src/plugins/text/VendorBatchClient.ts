/**
 * The vendor batch APIs behind app/ports/VendorBatches.ts: OpenAI's (a JSONL file uploaded to `/files` with purpose
 * `batch`, `POST /batches`, `GET /batches/{id}`, its output and error files) and Anthropic's Message Batches
 * (`POST /v1/messages/batches`, `GET …/{id}`, `GET …/{id}/results`). Each chat line's body is built by the text
 * plugin's own conversion (`buildCall` in TextPlugin.ts), each embeddings line's (OpenAI only) as the embeddings plugin
 * builds it (EmbeddingsPlugin.ts), as the interactive call to that upstream would be, and each result comes back as
 * that call's reply: a chat reply body, or the embeddings read as the embeddings plugin reads them. Results are read
 * from the upstream's own base URL (never from a URL the vendor names), so the upstream's key goes nowhere else.
 */
import { Effect, Layer, Result } from "effect"
import { randomUUID } from "node:crypto"
import { UpstreamClient } from "../../adapters/upstream/UpstreamClient.ts"
import type { UpstreamError } from "../../adapters/upstream/UpstreamError.ts"
import {
  type UpstreamConfig,
  VendorBatches,
  VendorBatchFailed,
  type VendorLine,
  type VendorLineResult,
  type VendorPoll
} from "../../app/ports/VendorBatches.ts"
import { openAiEmbeddingsRequest, openAiVectors, reportedPromptTokens } from "../embeddings/EmbeddingsPlugin.ts"
import { asArray, asRecord, isRecord, parseJson } from "./convert/json.ts"
import { failureFromUpstream } from "../UpstreamFailure.ts"
import { buildCall } from "./TextPlugin.ts"

/** Where OpenAI's batch object carries the group's tag (its `metadata`). */
export const TAG_KEY = "tollgate_tag"
const ENDED_OPENAI = new Set(["completed", "failed", "expired", "cancelled"])
/** How far before its recorded submit a vendor batch may be stamped (clocks differ) and still be the group's. */
const SKEW_SECONDS = 300
const MAX_FIND_PAGES = 10

/** A 4xx that asking again will not change: not our key refused, not a rate limit, a timeout or a conflict. */
const refusal4xx = (error: UpstreamError): boolean =>
  error.reason._tag === "HttpStatus" &&
  error.reason.status >= 400 &&
  error.reason.status < 500 &&
  ![401, 403, 408, 409, 429].includes(error.reason.status)

const jsonText = (value: unknown) => JSON.stringify(value)

const jsonl = (text: string): ReadonlyArray<Record<string, unknown>> =>
  text.split("\n").flatMap((line) => (line.trim() === "" ? [] : [asRecord(parseJson(line))]))

const errorMessage = (body: unknown): string => {
  const error = asRecord(asRecord(body).error)
  const inner = asRecord(error.error)
  const message = typeof error.message === "string" ? error.message : inner.message
  return typeof message === "string" ? message : "the vendor reported an error for this request"
}

const EMBEDDINGS_URL = "/v1/embeddings"
const CHAT_URL = "/v1/chat/completions"

/** An OpenAI embeddings reply as the embeddings plugin reads it (its vectors by their index, its usage). */
const embeddingsResult = (body: Record<string, unknown>): VendorLineResult => {
  const vectors = openAiVectors(body, asArray(body.data).length)
  return "_tag" in vectors
    ? { _tag: "Errored", status: 502, message: vectors.message }
    : { _tag: "Succeeded", reply: { _tag: "Embeddings", vectors, promptTokens: reportedPromptTokens(body) } }
}

/** What OpenAI's output or error file says of one line of a batch on `endpoint`. */
const openAiLine = (row: Record<string, unknown>, endpoint: unknown): VendorLineResult => {
  const response = asRecord(row.response)
  const error = asRecord(row.error)
  if (error.code === "batch_expired") return { _tag: "Expired" }
  if (error.code === "batch_cancelled") return { _tag: "Cancelled" }
  const status = typeof response.status_code === "number" ? response.status_code : 500
  if (status === 200 && isRecord(response.body)) {
    return endpoint === EMBEDDINGS_URL
      ? embeddingsResult(response.body)
      : { _tag: "Succeeded", reply: { _tag: "Chat", dialect: "openai", body: response.body } }
  }
  return { _tag: "Errored", status, message: isRecord(response.body) ? errorMessage(response.body) : errorMessage(row) }
}

/** What Anthropic's results say of one request. */
const anthropicLine = (row: Record<string, unknown>): VendorLineResult => {
  const result = asRecord(row.result)
  switch (result.type) {
    case "succeeded":
      return { _tag: "Succeeded", reply: { _tag: "Chat", dialect: "anthropic", body: result.message } }
    case "canceled":
      return { _tag: "Cancelled" }
    case "expired":
      return { _tag: "Expired" }
    default: {
      const type = asRecord(asRecord(result.error).error).type
      return {
        _tag: "Errored",
        status: type === "invalid_request_error" ? 400 : 500,
        message: errorMessage(result.error)
      }
    }
  }
}

interface BuiltLine {
  readonly customId: string
  readonly url: string
  readonly body: Record<string, unknown>
}

const multipart = (filename: string, content: string) => {
  const boundary = `tollgate-${randomUUID()}`
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
    `Content-Type: application/jsonl\r\n\r\n${content}\r\n--${boundary}--\r\n`
  return { body, contentType: `multipart/form-data; boundary=${boundary}` }
}

export const makeVendorBatchClient = (client: UpstreamClient["Service"]): VendorBatches["Service"] => {
  const send = (upstream: UpstreamConfig, method: "GET" | "POST", path: string, body?: string, type?: string) =>
    client
      .request({
        upstream,
        method,
        path,
        headers: body === undefined ? {} : { "content-type": type ?? "application/json" },
        ...(body === undefined ? {} : { body })
      })
      .pipe(
        Effect.flatMap((response) => response.body.text),
        Effect.mapError(
          (error) =>
            new VendorBatchFailed({
              message: `${upstream.name}: ${failureFromUpstream(error).message}`,
              refused: refusal4xx(error)
            })
        )
      )
  const json = (upstream: UpstreamConfig, method: "GET" | "POST", path: string, body?: unknown) =>
    Effect.map(send(upstream, method, path, body === undefined ? undefined : jsonText(body)), (text) =>
      asRecord(parseJson(text))
    )
  const idOf = (record: Record<string, unknown>, what: string) =>
    typeof record.id === "string"
      ? Effect.succeed(record.id)
      : Effect.fail(new VendorBatchFailed({ message: `the vendor's answer to ${what} carries no id`, refused: false }))

  /** The line's request at the vendor (its OpenAI batch `url` and body), or why it cannot be sent there. */
  const built = (line: VendorLine, upstream: UpstreamConfig): Result.Result<BuiltLine, string> => {
    const { call } = line
    if (call._tag === "Embeddings") {
      if (upstream.protocol !== "openai") return Result.fail("only OpenAI's batch API takes embeddings")
      const body = openAiEmbeddingsRequest(call.call)
      return Result.isFailure(body)
        ? Result.fail(body.failure.message)
        : Result.succeed({ customId: line.customId, url: EMBEDDINGS_URL, body: body.success })
    }
    const protocol = upstream.protocol === "anthropic" ? "anthropic" : "openai"
    const chat = buildCall({ ...call.call, request: { ...call.call.request, stream: false } }, protocol)
    return Result.isFailure(chat)
      ? Result.fail(`${chat.failure.param}: ${chat.failure.message}`)
      : Result.succeed({ customId: line.customId, url: CHAT_URL, body: chat.success.body })
  }

  const refusal: VendorBatches["Service"]["refusal"] = (line, upstream) =>
    Result.getOrUndefined(Result.flip(built(line, upstream)))

  const bodies = (upstream: UpstreamConfig, lines: ReadonlyArray<VendorLine>) =>
    lines.flatMap((line) => {
      const call = built(line, upstream)
      return Result.isSuccess(call) ? [call.success] : []
    })

  const submit: VendorBatches["Service"]["submit"] = (upstream, tag, lines) =>
    Effect.gen(function* () {
      if (upstream.protocol === "anthropic") {
        const requests = bodies(upstream, lines).map(({ customId, body }) => ({ custom_id: customId, params: body }))
        return yield* idOf(yield* json(upstream, "POST", "/v1/messages/batches", { requests }), "a message batch")
      }
      const requests = bodies(upstream, lines)
      // One OpenAI batch serves one endpoint; a group is lines of one client batch, so of one endpoint.
      const endpoint = requests[0]?.url ?? CHAT_URL
      if (requests.some((request) => request.url !== endpoint)) {
        return yield* Effect.fail(new VendorBatchFailed({ message: "a group mixes endpoints", refused: true }))
      }
      const content = requests
        .map(({ customId, url, body }) => jsonText({ custom_id: customId, method: "POST", url, body }))
        .join("\n")
      const form = multipart(`${tag}.jsonl`, content)
      const file = asRecord(parseJson(yield* send(upstream, "POST", "/files", form.body, form.contentType)))
      const fileId = yield* idOf(file, "a file upload")
      const batch = yield* json(upstream, "POST", "/batches", {
        input_file_id: fileId,
        endpoint,
        completion_window: "24h",
        metadata: { [TAG_KEY]: tag }
      })
      return yield* idOf(batch, "a batch")
    })

  /**
   * The vendor's batches, newest first, page by page (100 a page, at most `MAX_FIND_PAGES`) until one is older than
   * `sinceSeconds`: a group's batch, if the vendor took it, was created after its group was recorded.
   */
  const recent = (upstream: UpstreamConfig, sinceSeconds: number) =>
    Effect.gen(function* () {
      const anthropic = upstream.protocol === "anthropic"
      const seen: Array<Record<string, unknown>> = []
      let after: string | undefined
      for (let page = 0; page < MAX_FIND_PAGES; page++) {
        const cursor = after === undefined ? "" : `&${anthropic ? "after_id" : "after"}=${encodeURIComponent(after)}`
        const body = yield* json(
          upstream,
          "GET",
          `${anthropic ? "/v1/messages/batches" : "/batches"}?limit=100${cursor}`
        )
        const data = Array.isArray(body.data) ? body.data.map(asRecord) : []
        seen.push(...data)
        const last = data.at(-1)
        const lastCreated = anthropic ? Date.parse(String(last?.created_at)) / 1000 : Number(last?.created_at)
        if (body.has_more !== true || typeof last?.id !== "string" || !(lastCreated >= sinceSeconds)) break
        after = last.id
      }
      return seen
    })

  /**
   * OpenAI: the batch whose metadata carries the tag. Anthropic's batches carry no metadata: the oldest one created
   * since the group was recorded (less the clock skew) with as many requests as the group is taken for it
   * (docs/api/batches.md#vendor-batches says what that leaves open).
   */
  const find: VendorBatches["Service"]["find"] = (upstream, tag, lines, since) =>
    Effect.gen(function* () {
      const sinceSeconds = since.getTime() / 1000 - SKEW_SECONDS
      const batches = yield* recent(upstream, sinceSeconds)
      if (upstream.protocol !== "anthropic") {
        const found = batches.find((batch) => asRecord(batch.metadata)[TAG_KEY] === tag)
        return typeof found?.id === "string" ? found.id : undefined
      }
      const total = (counts: Record<string, unknown>) =>
        Object.values(counts).reduce<number>((sum, n) => sum + (typeof n === "number" ? n : 0), 0)
      const candidates = batches.filter(
        (batch) =>
          typeof batch.created_at === "string" &&
          Date.parse(batch.created_at) / 1000 >= sinceSeconds &&
          total(asRecord(batch.request_counts)) === lines
      )
      const oldest = candidates.sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)))[0]
      return typeof oldest?.id === "string" ? oldest.id : undefined
    })

  const fileLines = (upstream: UpstreamConfig, fileId: unknown) =>
    typeof fileId === "string"
      ? Effect.map(send(upstream, "GET", `/files/${encodeURIComponent(fileId)}/content`), jsonl)
      : Effect.succeed([])

  const poll: VendorBatches["Service"]["poll"] = (upstream, id) =>
    Effect.gen(function* () {
      const results = new Map<string, VendorLineResult>()
      const path =
        upstream.protocol === "anthropic"
          ? `/v1/messages/batches/${encodeURIComponent(id)}`
          : `/batches/${encodeURIComponent(id)}`
      const batch = yield* json(upstream, "GET", path)
      if (upstream.protocol === "anthropic") {
        if (batch.processing_status !== "ended") return { _tag: "Pending" } satisfies VendorPoll
        for (const row of jsonl(yield* send(upstream, "GET", `${path}/results`))) {
          if (typeof row.custom_id === "string") results.set(row.custom_id, anthropicLine(row))
        }
        return {
          _tag: "Ended",
          results,
          missing: { _tag: "Errored", status: 502, message: "the vendor returned no result" }
        } satisfies VendorPoll
      }
      if (typeof batch.status !== "string" || !ENDED_OPENAI.has(batch.status))
        return { _tag: "Pending" } satisfies VendorPoll
      const rows = [
        ...(yield* fileLines(upstream, batch.output_file_id)),
        ...(yield* fileLines(upstream, batch.error_file_id))
      ]
      for (const row of rows) {
        if (typeof row.custom_id === "string") results.set(row.custom_id, openAiLine(row, batch.endpoint))
      }
      const missing: VendorLineResult =
        batch.status === "expired"
          ? { _tag: "Expired" }
          : batch.status === "cancelled"
            ? { _tag: "Cancelled" }
            : {
                _tag: "Errored",
                status: 502,
                message: `the vendor's batch ${batch.status} without a result for this request`
              }
      return { _tag: "Ended", results, missing } satisfies VendorPoll
    })

  const cancel: VendorBatches["Service"]["cancel"] = (upstream, id) =>
    Effect.asVoid(
      upstream.protocol === "anthropic"
        ? json(upstream, "POST", `/v1/messages/batches/${encodeURIComponent(id)}/cancel`)
        : json(upstream, "POST", `/batches/${encodeURIComponent(id)}/cancel`)
    )

  return { refusal, submit, find, poll, cancel }
}

export const vendorBatchesLayer: Layer.Layer<VendorBatches, never, UpstreamClient> = Layer.effect(
  VendorBatches,
  Effect.map(UpstreamClient, makeVendorBatchClient)
)
