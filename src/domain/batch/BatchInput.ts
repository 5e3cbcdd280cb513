/**
 * A batch's input file as OpenAI defines it: JSONL, one request per line
 * (`{"custom_id", "method": "POST", "url", "body"}`), custom ids unique within the file, every line for the batch's
 * endpoint. Reading it is pure; what a line's body means (its model, its fields) is the endpoint's to check.
 */
import { Result } from "effect"

/** OpenAI's own limit on requests per batch. */
export const MAX_BATCH_LINES = 50_000

/** The endpoints a batch can run today. */
export const BATCH_ENDPOINTS = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"] as const

export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number]

/** The endpoint of Anthropic's Message Batches: its requests are kept in the same line format, `url` this one. */
export const MESSAGES_ENDPOINT: "/v1/messages" = "/v1/messages"

/** The purpose of a message batch's requests kept as its input file: internal, not one of the client's files. */
export const MESSAGE_BATCH_PURPOSE = "message_batch"

/** Every endpoint a batch line can run on, whichever surface submitted it. */
export type LineEndpoint = BatchEndpoint | typeof MESSAGES_ENDPOINT

export const isBatchEndpoint = (value: unknown): value is BatchEndpoint =>
  typeof value === "string" && (BATCH_ENDPOINTS as ReadonlyArray<string>).includes(value)

const MAX_CUSTOM_ID = 512

export interface InputLine {
  /** Its place among the requests, from 0 (blank lines are not counted). */
  readonly line: number
  readonly customId: string
  readonly body: Readonly<Record<string, unknown>>
}

/** Why a file cannot run: the line (1-based, as an editor shows it) and the field, in OpenAI's words. */
export interface LineProblem {
  readonly _tag: "LineProblem"
  readonly line: number | null
  readonly param: string
  readonly message: string
}

const problem = (line: number | null, param: string, message: string): LineProblem => ({
  _tag: "LineProblem",
  line,
  param,
  message
})

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Parses one non-blank line; `at` is its 1-based line number in the file. */
const readLine = (text: string, at: number, endpoint: string): Omit<InputLine, "line"> | LineProblem => {
  // JSON.parse reports bad input by throwing; Result.try keeps the throw here.
  const parsed = Result.try((): unknown => JSON.parse(text))
  if (Result.isFailure(parsed)) return problem(at, "", "is not valid JSON")
  const value = parsed.success
  if (!isRecord(value)) return problem(at, "", "must be a JSON object")
  const customId = value.custom_id
  if (typeof customId !== "string" || customId.length === 0 || customId.length > MAX_CUSTOM_ID) {
    return problem(at, "custom_id", `must be a string of 1 to ${MAX_CUSTOM_ID} characters`)
  }
  if (value.method !== "POST") return problem(at, "method", "must be POST")
  if (value.url !== endpoint) return problem(at, "url", `must be ${endpoint}, the batch's endpoint`)
  if (!isRecord(value.body)) return problem(at, "body", "must be a JSON object")
  if (value.body.stream === true) return problem(at, "body.stream", "streaming is not available in a batch")
  return { customId, body: value.body }
}

/** Every request of a JSONL file, or the first problem; `endpoint` is the batch's. */
export const readBatchInput = (content: string, endpoint: string): ReadonlyArray<InputLine> | LineProblem => {
  const lines: Array<InputLine> = []
  const seen = new Set<string>()
  const rows = content.split("\n")
  for (let index = 0; index < rows.length; index++) {
    const text = (rows[index] as string).trim()
    if (text === "") continue
    if (lines.length === MAX_BATCH_LINES) {
      return problem(index + 1, "", `the file has more than ${MAX_BATCH_LINES} requests`)
    }
    const read = readLine(text, index + 1, endpoint)
    if ("_tag" in read) return read
    if (seen.has(read.customId)) return problem(index + 1, "custom_id", `'${read.customId}' is used by an earlier line`)
    seen.add(read.customId)
    lines.push({ line: lines.length, ...read })
  }
  if (lines.length === 0) return problem(null, "input_file_id", "the file has no requests")
  return lines
}

/** The 1-based file line of each request, for messages about a request found later (its model, its fields). */
export const fileLineNumbers = (content: string): ReadonlyArray<number> => {
  const numbers: Array<number> = []
  content.split("\n").forEach((text, index) => {
    if (text.trim() !== "") numbers.push(index + 1)
  })
  return numbers
}
