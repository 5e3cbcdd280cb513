/**
 * A Responses client's own body on its way to an `openai-responses` upstream. The gateway keeps conversations itself,
 * so the upstream keeps nothing (`store: false`, no `previous_response_id` or `conversation`: the gateway already put the history in
 * `input`, no `background`: the gateway runs it) and returns its encrypted reasoning, which the gateway stores for the
 * next turn. Reasoning that OpenAI did not issue (another vendor's turn, or a summary without its content) cannot be
 * verified there and is left out.
 */
import { asArray, asRecord, asString, type JsonRecord } from "./json.ts"
import { readResponsesEncrypted } from "./thinkingSignature.ts"

const isOpenAIReasoning = (item: unknown): boolean => {
  const record = asRecord(item)
  if (record.type !== "reasoning") return true
  const encrypted = readResponsesEncrypted(asString(record.encrypted_content))
  return encrypted.type === "signed" && encrypted.origin === "openai"
}

export const toResponsesUpstream = (body: JsonRecord, upstreamModel: string): Record<string, unknown> => {
  const {
    previous_response_id: _previous,
    conversation: _conversation,
    background: _background,
    store: _store,
    include,
    input,
    ...rest
  } = body
  const includes = new Set([...asArray(include).filter((i) => typeof i === "string"), "reasoning.encrypted_content"])
  return {
    ...rest,
    model: upstreamModel,
    input: Array.isArray(input) ? input.filter(isOpenAIReasoning) : input,
    store: false,
    include: [...includes]
  }
}
