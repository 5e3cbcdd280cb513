/**
 * A batch's output and error files in OpenAI's line format: one JSON object per line,
 * `{"id", "custom_id", "response": {"status_code", "request_id", "body"} | null, "error": {"code", "message"} | null}`,
 * in the input file's order. Answered lines go to the output file, the others (refused, failed, cancelled) to the
 * error file; a file with no line is not written.
 */
import { createHash } from "node:crypto"
import type { BatchState, LineResult } from "../../domain/batch/BatchJob.ts"

const digest = (text: string) => createHash("sha256").update(text).digest("hex")

/** The hold a line runs under: the same id on every run of the line, so a restart finds the hold it placed. */
export const lineHoldId = (batchId: string, line: number): string => {
  const hex = digest(`batch-line-hold:${batchId}:${line}`)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** The holds of a batch's lines, started or not (a line never started has no hold under its id). */
export const lineHoldIds = (batchId: string, lines: number): ReadonlyArray<string> =>
  Array.from({ length: lines }, (_, line) => lineHoldId(batchId, line))

export { lineRequestId } from "../../domain/batch/ExpiredLines.ts"

const jsonLine = (batchId: string, result: LineResult) =>
  JSON.stringify({
    id: `batch_req_${digest(`${batchId}:${result.line}`).slice(0, 32)}`,
    custom_id: result.customId,
    response:
      result.response === null
        ? null
        : { status_code: result.response.statusCode, request_id: result.requestId, body: result.response.body },
    error: result.error
  })

/** The two files' contents (undefined when empty). */
export const renderOutput = (state: BatchState): { readonly output?: string; readonly errors?: string } => {
  const ordered = [...state.lines.values()].sort((a, b) => a.line - b.line)
  const output = ordered.filter((r) => r.outcome === "succeeded").map((r) => jsonLine(state.batchId, r))
  const errors = ordered.filter((r) => r.outcome !== "succeeded").map((r) => jsonLine(state.batchId, r))
  return {
    ...(output.length === 0 ? {} : { output: `${output.join("\n")}\n` }),
    ...(errors.length === 0 ? {} : { errors: `${errors.join("\n")}\n` })
  }
}
