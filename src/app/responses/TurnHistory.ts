/**
 * `truncation: "auto"`: the oldest items of a conversation dropped until it fits the model's context window, as
 * OpenAI does. System and developer messages stay, and so does the newest item (with the call it answers); a function
 * call's output goes with its call (an output without its call is refused by every vendor). Pure: the gateway counts the tokens.
 */
import type { JsonObject } from "../ports/ResponseStore.ts"

/** The context window of a model whose config declares none. */
export const DEFAULT_CONTEXT_WINDOW = 128_000

const isInstruction = (item: JsonObject): boolean =>
  item.type === "message" && (item.role === "system" || item.role === "developer")

/** `items` without their oldest ones, so that the tokens of those kept (`tokens[i]` for `items[i]`) fit `budget`. */
export const truncateOldest = (
  items: ReadonlyArray<JsonObject>,
  tokens: ReadonlyArray<number>,
  budget: number
): ReadonlyArray<JsonObject> => {
  let total = tokens.reduce((sum, n) => sum + n, 0)
  if (total <= budget) return items
  const dropped = new Set<number>()
  const droppedCalls = new Set<unknown>()
  // The newest item stays, and so does the call it answers, if it is a call's output.
  const newest = items.at(-1)
  const answered = newest?.type === "function_call_output" ? newest.call_id : undefined
  for (let i = 0; i < items.length - 1 && total > budget; i++) {
    const item = items[i] as JsonObject
    if (isInstruction(item) || (item.type === "function_call" && item.call_id === answered)) continue
    dropped.add(i)
    total -= tokens[i] ?? 0
    if (item.type === "function_call") droppedCalls.add(item.call_id)
  }
  return items.filter((item, i) => {
    if (dropped.has(i)) return false
    return !(item.type === "function_call_output" && droppedCalls.has(item.call_id))
  })
}
