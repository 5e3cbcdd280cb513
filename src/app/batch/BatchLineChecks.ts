/**
 * A batch's lines checked at submit, each as its endpoint would take it (model, the key's list, fields): the first
 * refusal names its line and field, and nothing is recorded or held for a batch with one.
 */
import { Effect } from "effect"
import {
  type BatchEndpoint,
  fileLineNumbers,
  MESSAGES_ENDPOINT,
  readBatchInput
} from "../../domain/batch/BatchInput.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import { BatchInvalid } from "./BatchErrors.ts"
import { type LineServices, planLine } from "./LinePlans.ts"

/** An OpenAI batch's input file: read, then every line planned; a refusal names the file's line number. */
export const checkBatchLines = Effect.fnUntraced(function* (
  services: LineServices,
  input: { readonly key: AuthenticatedKey; readonly requestId: string },
  endpoint: BatchEndpoint,
  content: string
) {
  const read = readBatchInput(content, endpoint)
  if ("_tag" in read) {
    const where = read.line === null ? "" : `line ${read.line}: `
    return yield* new BatchInvalid({
      message: `${where}${read.param === "" ? "" : `${read.param}: `}${read.message}`,
      param: read.param === "" ? null : read.param,
      line: read.line,
      code: "invalid_batch_line"
    })
  }
  const fileLines = fileLineNumbers(content)
  for (const line of read) {
    const planned = yield* planLine(services, endpoint, input.key, line.body, input.requestId)
    if (planned._tag === "Success") continue
    const at = fileLines[line.line] ?? line.line + 1
    const field = `body.${planned.failure.param ?? "model"}`
    return yield* new BatchInvalid({
      message: `line ${at}: ${field}: ${planned.failure.message}`,
      param: field,
      line: at,
      code: "invalid_batch_line"
    })
  }
  return read
})

/** A message batch's requests, each planned as `POST /v1/messages` plans it; a refusal names its index and field. */
export const checkMessageRequests = Effect.fnUntraced(function* (
  services: LineServices,
  input: {
    readonly key: AuthenticatedKey
    readonly requestId: string
    readonly requests: ReadonlyArray<{ readonly customId: string; readonly params: Record<string, unknown> }>
  }
) {
  for (const [index, request] of input.requests.entries()) {
    const planned = yield* planLine(services, MESSAGES_ENDPOINT, input.key, request.params, input.requestId)
    if (planned._tag === "Success") continue
    const field = `requests.${index}.params.${planned.failure.param ?? "model"}`
    return yield* new BatchInvalid({
      message: `requests[${index}] (custom_id '${request.customId}'): ${field}: ${planned.failure.message}`,
      param: field,
      line: index,
      code: "invalid_request"
    })
  }
})
