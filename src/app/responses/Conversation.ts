/**
 * Pure steps of a stored conversation (the Responses API's `previous_response_id`): the turn's input as items with
 * ids, the history a stored response leaves for the next turn, `item_reference`s replaced by the items they name, and
 * input-item pages. No I/O: `ResponsesGateway` reads and writes the store around these.
 */
import { randomUUID } from "node:crypto"
import type { JsonObject } from "../ports/ResponseStore.ts"
import { type ListPage, listPage } from "../../domain/ListPage.ts"

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const newId = (prefix: string): string => `${prefix}_${randomUUID().replaceAll("-", "")}`

const ID_PREFIX: Readonly<Record<string, string>> = {
  message: "msg",
  function_call: "fc",
  function_call_output: "fco",
  reasoning: "rs"
}

/** The turn's input as items, each with an id (the client's, or a new one), as `input_items` lists them. */
export const turnItems = (input: unknown): ReadonlyArray<JsonObject> => {
  const items: ReadonlyArray<unknown> =
    typeof input === "string"
      ? [{ type: "message", role: "user", content: [{ type: "input_text", text: input }] }]
      : Array.isArray(input)
        ? input
        : []
  return items.filter(isObject).map((item) => {
    const type = typeof item.type === "string" ? item.type : "message"
    const content =
      type === "message" && typeof item.content === "string"
        ? [{ type: item.role === "assistant" ? "output_text" : "input_text", text: item.content }]
        : item.content
    return {
      ...item,
      type,
      ...(content === undefined ? {} : { content }),
      ...(type === "message" && item.status === undefined ? { status: "completed" } : {}),
      id: typeof item.id === "string" ? item.id : newId(ID_PREFIX[type] ?? "item")
    }
  })
}

/**
 * What a response leaves for the next turn: everything its model was given, then its output. Output items of a
 * response that failed or was cancelled are left out with it.
 */
export const historyOf = (inputItems: ReadonlyArray<JsonObject>, response: JsonObject): ReadonlyArray<JsonObject> => [
  ...inputItems,
  ...(Array.isArray(response.output) ? response.output.filter(isObject) : [])
]

/**
 * Items as they go to a model: ids are the gateway's bookkeeping and stay out (an upstream that keeps nothing would
 * look them up), except a reasoning item's, which travels with its encrypted content.
 */
export const forModel = (items: ReadonlyArray<JsonObject>): ReadonlyArray<JsonObject> =>
  items.map((item) => {
    if (item.type === "reasoning" || item.id === undefined) return item
    const { id: _id, ...rest } = item
    return rest
  })

/** The ids the turn's `item_reference`s name. */
export const referencedIds = (input: unknown): ReadonlyArray<string> =>
  Array.isArray(input)
    ? input.flatMap((item) =>
        isObject(item) && item.type === "item_reference" && typeof item.id === "string" ? [item.id] : []
      )
    : []

/** The turn's input with each `item_reference` replaced by its item; the index of the first one not found, if any. */
export const resolveReferences = (
  input: unknown,
  found: ReadonlyMap<string, JsonObject>
): { readonly input: unknown; readonly missing?: number } => {
  if (!Array.isArray(input)) return { input }
  const resolved: Array<unknown> = []
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i]
    if (!isObject(item) || item.type !== "item_reference") {
      resolved.push(item)
      continue
    }
    const target = typeof item.id === "string" ? found.get(item.id) : undefined
    if (target === undefined) return { input, missing: i }
    resolved.push(target)
  }
  return { input: resolved }
}

export type ItemPage = ListPage<JsonObject>

/** A page of input items, as `GET /v1/responses/{id}/input_items` lists them (newest first unless `asc`). */
export const itemPage = (
  items: ReadonlyArray<JsonObject>,
  options: {
    readonly order: "asc" | "desc"
    readonly limit: number
    readonly after?: string | undefined
    readonly before?: string | undefined
  }
): ItemPage => {
  let ordered = options.order === "asc" ? [...items] : [...items].reverse()
  if (options.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === options.after)
    ordered = at < 0 ? [] : ordered.slice(at + 1)
  }
  if (options.before !== undefined) {
    const at = ordered.findIndex((item) => item.id === options.before)
    ordered = at < 0 ? [] : ordered.slice(0, at)
  }
  const data = ordered.slice(0, options.limit)
  return listPage(data, ordered.length > data.length)
}
