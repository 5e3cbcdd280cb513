/**
 * The vendor batch endpoints the simulator serves (VendorBatchJobs.ts holds their state): OpenAI's `POST /v1/files`
 * (multipart, purpose `batch`), `GET /v1/files/{id}[/content]`, `POST /v1/batches`, `GET /v1/batches[/{id}]`,
 * `POST /v1/batches/{id}/cancel`; Anthropic's `POST /v1/messages/batches`, `GET /v1/messages/batches[/{id}]`,
 * `GET …/{id}/results`, `POST …/{id}/cancel`. OpenAI batches on `/v1/chat/completions` or `/v1/embeddings`, and
 * Messages, are taken.
 */
import { Option } from "effect"
import { MultipartParser } from "effect/http"
import { checkAnthropicAuth, fail } from "../AnthropicRequest.ts"
import { textReply, type AudioReply } from "../audio/AudioReply.ts"
import type { RawSimRequest } from "../images/EditInputs.ts"
import { arrayField, field, isRecord, stringField } from "../Json.ts"
import { checkOpenAIAuth } from "../OpenAIChat.ts"
import { invalid } from "../OpenAIReplies.ts"
import { openAIError } from "../ErrorEnvelopes.ts"
import type { CacheKnobs } from "../PromptCache.ts"
import { type Dialect, header, json, type SimContext, type SimReply } from "../SimResponse.ts"
import { EMBEDDINGS_PATH } from "../audio/OpenAIEmbeddings.ts"
import type { VendorBatch, VendorBatchJobs } from "./VendorBatchJobs.ts"

export interface VendorBatchRoute {
  readonly dialect: Dialect
  readonly handle: (context: SimContext, cache: CacheKnobs) => SimReply | AudioReply
}

const seconds = (ms: number) => Math.floor(ms / 1000)
const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString())
const notFound = (what: string) => json(404, openAIError(404, `No ${what} found with that id.`))

const fileObject = (file: { id: string; filename: string; purpose: string; content: string; createdAtMs: number }) => ({
  id: file.id,
  object: "file",
  bytes: Buffer.byteLength(file.content),
  created_at: seconds(file.createdAtMs),
  filename: file.filename,
  purpose: file.purpose,
  status: "processed"
})

const readUpload = (request: RawSimRequest) => {
  const fields: Record<string, string> = {}
  let upload: { filename: string; content: string } | undefined
  let failure: string | undefined
  const parser = MultipartParser.make({
    headers: { "content-type": header(request, "content-type") ?? "" },
    onField: (info, value) => {
      fields[info.name] = MultipartParser.decodeField(info, value)
    },
    onFile: (info) => {
      const chunks: Array<Uint8Array> = []
      return (chunk) => {
        if (chunk !== null) chunks.push(chunk)
        else upload = { filename: info.filename ?? "upload.jsonl", content: Buffer.concat(chunks).toString("utf8") }
      }
    },
    onError: (error) => {
      failure ??= error._tag
    },
    onDone: () => {}
  })
  parser.write(request.raw)
  parser.end()
  return failure === undefined ? { fields, upload } : undefined
}

/** An ended batch's output file (answers with status 200) and error file (the others), each only when not empty. */
const writeFiles = (jobs: VendorBatchJobs, batch: VendorBatch) => {
  const row = (line: VendorBatch["lines"][number], n: number) => {
    const outcome = line.outcome.current
    const status = outcome._tag === "Answered" ? outcome.status : 500
    const body = outcome._tag === "Answered" ? outcome.body : null
    return JSON.stringify({
      id: `batch_req_${batch.id}_${n}`,
      custom_id: line.customId,
      response: { status_code: status, request_id: `req_${batch.id}_${n}`, body },
      error: null
    })
  }
  const ok = batch.lines.flatMap((line, n) =>
    line.outcome.current._tag === "Answered" && line.outcome.current.status === 200 ? [row(line, n)] : []
  )
  const bad = batch.lines.flatMap((line, n) =>
    line.outcome.current._tag === "Answered" && line.outcome.current.status === 200 ? [] : [row(line, n)]
  )
  const write = (rows: ReadonlyArray<string>, suffix: string) =>
    rows.length === 0
      ? null
      : jobs.addFile({
          filename: `${batch.id}_${suffix}.jsonl`,
          purpose: "batch_output",
          content: `${rows.join("\n")}\n`
        }).id
  batch.state.outputFileId = write(ok, "output")
  batch.state.errorFileId = write(bad, "error")
}

/** Writes an ended OpenAI batch's output and error files once; answers its object. */
const openAiBatch = (jobs: VendorBatchJobs, batch: VendorBatch) => {
  const phase = jobs.phaseOf(batch)
  const ended = phase._tag === "Ended"
  if (ended && !phase.cancelled && batch.state.outputFileId === null && batch.state.errorFileId === null) {
    writeFiles(jobs, batch)
  }
  const ok = batch.lines.filter(
    (line) => line.outcome.current._tag === "Answered" && line.outcome.current.status === 200
  ).length
  const endedAt = ended ? seconds(phase.atMs) : null
  return {
    id: batch.id,
    object: "batch",
    endpoint: batch.endpoint,
    errors: null,
    input_file_id: batch.inputFileId,
    completion_window: "24h",
    status: !ended ? "in_progress" : phase.cancelled ? "cancelled" : "completed",
    output_file_id: batch.state.outputFileId,
    error_file_id: batch.state.errorFileId,
    created_at: seconds(batch.createdAtMs),
    in_progress_at: seconds(batch.createdAtMs),
    expires_at: seconds(batch.createdAtMs) + 86_400,
    completed_at: ended && !phase.cancelled ? endedAt : null,
    cancelled_at: ended && phase.cancelled ? endedAt : null,
    request_counts: {
      total: batch.lines.length,
      completed: ended && !phase.cancelled ? ok : 0,
      failed: ended && !phase.cancelled ? batch.lines.length - ok : 0
    },
    metadata: batch.metadata
  }
}

const anthropicBatch = (jobs: VendorBatchJobs, batch: VendorBatch, baseUrl: string) => {
  const phase = jobs.phaseOf(batch)
  const ended = phase._tag === "Ended"
  const count = (type: string) =>
    ended ? batch.lines.filter((line) => resultType(line, phase.cancelled) === type).length : 0
  return {
    id: batch.id,
    type: "message_batch",
    processing_status: ended ? "ended" : "in_progress",
    request_counts: {
      processing: ended ? 0 : batch.lines.length,
      succeeded: count("succeeded"),
      errored: count("errored"),
      canceled: count("canceled"),
      expired: 0
    },
    ended_at: ended ? iso(phase.atMs) : null,
    created_at: iso(batch.createdAtMs),
    expires_at: iso(batch.createdAtMs + 86_400_000),
    archived_at: null,
    cancel_initiated_at: iso(batch.state.cancelledAtMs),
    results_url: ended ? `${baseUrl}/v1/messages/batches/${batch.id}/results` : null
  }
}

const resultType = (line: VendorBatch["lines"][number], cancelled: boolean) => {
  const outcome = line.outcome.current
  if (cancelled) return "canceled"
  return outcome._tag === "Answered" && outcome.status === 200 ? "succeeded" : "errored"
}

const anthropicResults = (batch: VendorBatch, cancelled: boolean) =>
  batch.lines
    .map((line) => {
      const type = resultType(line, cancelled)
      const outcome = line.outcome.current
      const body = outcome._tag === "Answered" ? outcome.body : null
      const result =
        type === "succeeded" ? { type, message: body } : type === "errored" ? { type, error: body } : { type }
      return `${JSON.stringify({ custom_id: line.customId, result })}\n`
    })
    .join("")

/** A JSONL line, or undefined when it is not JSON (`JSON.parse` throws; Option.liftThrowable wraps it). */
const parseLine = (line: string): unknown => Option.getOrUndefined(parseOption(line))
const parseOption = Option.liftThrowable((line: string): unknown => JSON.parse(line))

const segmentAfter = (path: string, prefix: string) => {
  const rest = path.slice(prefix.length)
  return rest === "" || rest.includes("/") ? undefined : decodeURIComponent(rest)
}

/** `POST /v1/batches`: the input file's requests, answered now, shown at the end of the batch's time. */
const createOpenAiBatch = (request: RawSimRequest, jobs: VendorBatchJobs, context: SimContext, cache: CacheKnobs) => {
  const body = request.body
  const file = jobs.file(stringField(body, "input_file_id") ?? "")
  if (file === undefined) return invalid("input_file_id: no such file", "input_file_id")
  const endpoint = stringField(body, "endpoint")
  if (endpoint !== "/v1/chat/completions" && endpoint !== EMBEDDINGS_PATH)
    return invalid("The simulator batches only /v1/chat/completions and /v1/embeddings.", "endpoint")
  const lines = file.content
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map(parseLine)
  const requests = lines.map((line) => ({
    customId: stringField(line, "custom_id") ?? "",
    body: field(line, "body")
  }))
  const metadata = field(body, "metadata")
  const batch = jobs.submit(
    "openai",
    requests,
    { metadata: isRecord(metadata) ? (metadata as Record<string, string>) : null, inputFileId: file.id, endpoint },
    request,
    context,
    cache
  )
  return json(200, openAiBatch(jobs, batch))
}

const listOpenAiBatches = (request: RawSimRequest, jobs: VendorBatchJobs) => {
  const limit = Number(request.query.get("limit") ?? "20")
  const data = jobs
    .list("openai")
    .slice(0, limit)
    .map((batch) => openAiBatch(jobs, batch))
  return json(200, {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: false
  })
}

const openAiRoute = (request: RawSimRequest, jobs: VendorBatchJobs): VendorBatchRoute | undefined => {
  const { method, path } = request
  const guarded = (handle: VendorBatchRoute["handle"]): VendorBatchRoute => ({
    dialect: "openai",
    handle: (context, cache) => checkOpenAIAuth(request, context) ?? handle(context, cache)
  })
  if (method === "POST" && path === "/v1/files") {
    return guarded(() => {
      const read = readUpload(request)
      if (read === undefined || read.upload === undefined) return invalid("Could not parse the multipart form.")
      if (read.fields.purpose !== "batch") return invalid("The simulator takes only purpose 'batch'.", "purpose")
      return json(200, fileObject(jobs.addFile({ ...read.upload, purpose: "batch" })))
    })
  }
  if (method === "GET" && path.startsWith("/v1/files/")) {
    const content = path.endsWith("/content")
    const id = segmentAfter(content ? path.slice(0, -"/content".length) : path, "/v1/files/")
    const file = id === undefined ? undefined : jobs.file(id)
    if (id === undefined) return undefined
    return guarded(() =>
      file === undefined
        ? notFound("file")
        : content
          ? textReply(file.content, "application/jsonl")
          : json(200, fileObject(file))
    )
  }
  if (method === "POST" && path === "/v1/batches") {
    return guarded((context, cache) => createOpenAiBatch(request, jobs, context, cache))
  }
  if (method === "GET" && path === "/v1/batches") return guarded(() => listOpenAiBatches(request, jobs))
  if (path.startsWith("/v1/batches/")) {
    const cancel = method === "POST" && path.endsWith("/cancel")
    const id = segmentAfter(cancel ? path.slice(0, -"/cancel".length) : path, "/v1/batches/")
    if (id === undefined || (method !== "GET" && !cancel)) return undefined
    return guarded(() => {
      const batch = jobs.batch(id)
      if (batch === undefined || batch.api !== "openai") return notFound("batch")
      if (cancel && jobs.phaseOf(batch)._tag === "InProgress") jobs.cancel(batch)
      return json(200, openAiBatch(jobs, batch))
    })
  }
  return undefined
}

const anthropicRoute = (
  request: RawSimRequest,
  jobs: VendorBatchJobs,
  baseUrl: string
): VendorBatchRoute | undefined => {
  const { method, path } = request
  const prefix = "/v1/messages/batches"
  if (path !== prefix && !path.startsWith(`${prefix}/`)) return undefined
  const guarded = (handle: VendorBatchRoute["handle"]): VendorBatchRoute => ({
    dialect: "anthropic",
    handle: (context, cache) =>
      checkAnthropicAuth(request, context, `req_sim${context.nextId()}`) ?? handle(context, cache)
  })
  if (path === prefix && method === "POST") {
    return guarded((context, cache) => {
      const requests = arrayField(request.body, "requests")
      if (requests === undefined || requests.length === 0)
        return fail(400, "requests: expected a non-empty list", "req_sim")
      const lines = requests.map((line) => ({
        customId: stringField(line, "custom_id") ?? "",
        body: field(line, "params")
      }))
      const batch = jobs.submit(
        "anthropic",
        lines,
        { metadata: null, inputFileId: null, endpoint: "/v1/messages" },
        request,
        context,
        cache
      )
      return json(200, anthropicBatch(jobs, batch, baseUrl))
    })
  }
  if (path === prefix && method === "GET") {
    return guarded(() => {
      const limit = Number(request.query.get("limit") ?? "20")
      const data = jobs
        .list("anthropic")
        .slice(0, limit)
        .map((batch) => anthropicBatch(jobs, batch, baseUrl))
      return json(200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null })
    })
  }
  const rest = path.slice(prefix.length + 1).split("/")
  const [id, action] = [decodeURIComponent(rest[0] ?? ""), rest[1]]
  if (rest.length > 2 || (action !== undefined && action !== "results" && action !== "cancel")) return undefined
  return guarded(() => {
    const batch = jobs.batch(id)
    if (batch === undefined || batch.api !== "anthropic") return fail(404, `message batch ${id} not found`, "req_sim")
    if (action === "cancel" && method === "POST") {
      if (jobs.phaseOf(batch)._tag === "InProgress") jobs.cancel(batch)
      return json(200, anthropicBatch(jobs, batch, baseUrl))
    }
    const phase = jobs.phaseOf(batch)
    if (action === "results" && method === "GET") {
      if (phase._tag !== "Ended") return fail(400, `message batch ${id} has not ended`, "req_sim")
      return textReply(anthropicResults(batch, phase.cancelled), "application/x-jsonl")
    }
    return method === "GET" && action === undefined
      ? json(200, anthropicBatch(jobs, batch, baseUrl))
      : fail(404, "not found", "req_sim")
  })
}

export const vendorBatchRoute = (
  request: RawSimRequest,
  jobs: VendorBatchJobs,
  baseUrl: string
): VendorBatchRoute | undefined => openAiRoute(request, jobs) ?? anthropicRoute(request, jobs, baseUrl)
