/**
 * The OpenAI-shaped refusals every simulated OpenAI endpoint gives the same way: a 400 naming the parameter, the 404
 * of an unknown model, and the checks of a required, bounded text parameter (`prompt`, `input`) with the API's words.
 */
import { openAIError } from "./ErrorEnvelopes.ts"
import { field } from "./Json.ts"
import { json, type SimReply } from "./SimResponse.ts"

/** A 400 in OpenAI's envelope, naming the parameter and its code when there is one. */
export const invalid = (message: string, param: string | null = null, code: string | null = null): SimReply =>
  json(400, openAIError(400, message, { param, code }))

/** The 404 OpenAI answers for a model it does not serve (or not to this key). */
export const modelNotFound = (model: string): SimReply =>
  json(404, openAIError(404, `The model \`${model}\` does not exist or you do not have access to it.`))

/** `params[name]` as a non-empty string of at most `maxLength` characters, or OpenAI's 400 for it. */
export const requiredText = (params: unknown, name: string, maxLength: number): string | SimReply => {
  const value = field(params, name)
  if (typeof value !== "string" || value.length === 0) {
    return invalid(`Missing required parameter: '${name}'.`, name, "missing_required_parameter")
  }
  if (value.length > maxLength) {
    return invalid(
      `Invalid '${name}': string too long. Expected a string with maximum length ${maxLength}, but got a string with length ${value.length} instead.`,
      name,
      "string_above_max_length"
    )
  }
  return value
}
