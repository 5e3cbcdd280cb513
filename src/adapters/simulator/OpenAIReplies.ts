/**
 * The OpenAI-shaped refusals every simulated OpenAI endpoint gives the same way: a 400 naming the parameter, the 400
 * of a body that is not JSON, an unsupported value, the 404 of an unknown model, and the checks of a required model
 * and of a required, bounded text parameter (`prompt`, `input`) with the API's words.
 */
import { openAIError } from "./ErrorEnvelopes.ts"
import { field, stringField } from "./Json.ts"
import { json, type SimReply } from "./SimResponse.ts"

/** A 400 in OpenAI's envelope, naming the parameter and its code when there is one. */
export const invalid = (message: string, param: string | null = null, code: string | null = null): SimReply =>
  json(400, openAIError(400, message, { param, code }))

/** The 400 OpenAI answers for a body that is not a JSON object. */
export const notJson = (): SimReply =>
  invalid(
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
  )

/** The 400 for a value outside the parameter's supported ones. */
export const invalidValue = (param: string, value: unknown, supported: ReadonlyArray<string>): SimReply =>
  invalid(
    `Invalid value: '${String(value)}'. Supported values are: ${supported
      .map((s, i) => (i === supported.length - 1 ? `and '${s}'` : `'${s}'`))
      .join(", ")}.`,
    param,
    "invalid_value"
  )

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

/** The body's `model`, one the simulator serves (`models`: all when undefined), or OpenAI's 400 or 404 for it. */
export const servedModel = (body: unknown, models: ReadonlyArray<string> | undefined): string | SimReply => {
  const model = stringField(body, "model")
  if (model === undefined) return invalid("you must provide a model parameter")
  return models !== undefined && !models.includes(model) ? modelNotFound(model) : model
}
