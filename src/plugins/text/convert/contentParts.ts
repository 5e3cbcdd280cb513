/** A message's `content` as both OpenAI protocols (chat completions, Responses) carry it. */
import { Result } from "effect"
import { type Converted, convertError, type UserPart } from "./ChatIR.ts"
import { asRecord, type JsonRecord } from "./json.ts"

/**
 * A string is one text part; an array is read part by part by `decode`, which knows the protocol's part types and
 * names a part's problems at `at` (its dotted path). A part decoded to undefined adds nothing to the request.
 */
export const contentParts = (
  content: unknown,
  param: string,
  decode: (part: JsonRecord, at: string) => Converted<UserPart | undefined>
): Converted<ReadonlyArray<UserPart>> => {
  if (typeof content === "string") return Result.succeed([{ type: "text", text: content }])
  if (!Array.isArray(content)) return convertError(param, "content must be a string or an array of parts")
  const parts: Array<UserPart> = []
  for (let j = 0; j < content.length; j++) {
    const decoded = decode(asRecord(content[j]), `${param}.${j}`)
    if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
    if (decoded.success !== undefined) parts.push(decoded.success)
  }
  return Result.succeed(parts)
}

/** A text part whose `text` (or `field`) must be a string. */
export const textPart = (part: JsonRecord, at: string, field = "text"): Converted<UserPart> => {
  const text = part[field]
  return typeof text === "string"
    ? Result.succeed({ type: "text", text })
    : convertError(`${at}.${field}`, `${field} must be a string`)
}
