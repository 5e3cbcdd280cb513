/**
 * OpenAI's Responses API at the edge: its body to the chat IR and back, its input counted, the endpoint its clients
 * call. (Its SSE events are converted by the stream transducer; its error envelope is OpenAI's.)
 */
import { Result } from "effect"
import { finishTally, tallyResponses } from "../../adapters/tokenizer/ChatTally.ts"
import type { ChatDialect, Presented, ReplyContext } from "../../app/ports/ChatDialects.ts"
import { responsesRequestToIR } from "../../plugins/text/convert/responsesRequestToIR.ts"
import {
  asGatewayResponse,
  forClient,
  irToResponsesResponse,
  responsesResponseToIR,
  wantsEncrypted,
  withoutEncrypted
} from "../../plugins/text/convert/responsesResponse.ts"
import { isRecord } from "../../plugins/text/convert/json.ts"
import { responsesBodyProblem } from "./ResponsesRequestSchema.ts"
import { countTally, problem } from "./shared.ts"

const TERMINAL = new Set(["completed", "incomplete", "failed", "cancelled"])

const gatewayResponse = (raw: Readonly<Record<string, unknown>>, context: ReplyContext) =>
  asGatewayResponse(
    raw,
    { id: context.responseId ?? String(raw.id), model: context.model, createdAt: context.created },
    context.body
  )

/**
 * A Response object, or a stream event carrying one (`response.*`) or an output item, as the client sees it: under
 * the gateway's id and model with the client's settings, encrypted reasoning only when asked for. The whole object of
 * a finished response is kept.
 */
const present = (value: Readonly<Record<string, unknown>>, context: ReplyContext): Presented | undefined => {
  if (value.object === "response") {
    const whole = gatewayResponse(value, context)
    return { shown: forClient(whole, context.body), final: whole }
  }
  if (isRecord(value.response)) {
    const whole = gatewayResponse(value.response, context)
    const shown = { ...value, response: forClient(whole, context.body) }
    return TERMINAL.has(String(whole.status)) ? { shown, final: whole } : { shown }
  }
  if (isRecord(value.item) && !wantsEncrypted(context.body)) {
    const item = withoutEncrypted(value.item)
    return item === value.item ? undefined : { shown: { ...value, item } }
  }
  return undefined
}

export const responses: ChatDialect = {
  dialect: "responses",
  called: () => "POST /v1/responses",
  check: (body) => responsesBodyProblem(body, false),
  decode: (body) => Result.mapError(responsesRequestToIR(body), problem),
  countInput: (body) =>
    countTally(
      tallyResponses({ input: body.input, instructions: body.instructions, tools: body.tools as never }),
      finishTally
    ),
  readReply: (body) => Result.mapError(responsesResponseToIR(body), problem),
  encodeReply: (response, created, client) =>
    irToResponsesResponse(
      response,
      { id: client.responseId ?? response.id, model: response.model, createdAt: created },
      client.body
    ),
  present
}
