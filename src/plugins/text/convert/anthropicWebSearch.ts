/**
 * Anthropic's server-side web search for a request that asks for a hosted web search (a Responses client's
 * `web_search`, chat completions' `web_search_options`): the `web_search_20250305` tool, at most MAX_WEB_SEARCHES
 * searches a call (what the hold covers), and each search it ran — a `server_tool_use` block with its query, then a
 * `web_search_tool_result` block with what it found — read back as a WebSearch. Anthropic counts them in
 * `usage.server_tool_use.web_search_requests`.
 */
import type { ChatRequest, WebSearch } from "./ChatIR.ts"
import { asArray, asCount, asRecord, asString, parseJsonObject } from "./json.ts"

export const MAX_WEB_SEARCHES = 5

export const wantsWebSearch = (request: ChatRequest): boolean =>
  request.hostedTools?.some((tool) => tool.type.startsWith("web_search")) === true

export const WEB_SEARCH_TOOL = { type: "web_search_20250305", name: "web_search", max_uses: MAX_WEB_SEARCHES }

/** The searches a usage object reports, if it reports any. */
export const webSearchRequests = (usage: unknown): number | undefined => {
  const count = asCount(asRecord(asRecord(usage).server_tool_use).web_search_requests)
  return count > 0 ? count : undefined
}

/** A `web_search_tool_result` block as a search, given the query of the `server_tool_use` it answers. */
export const webSearchOf = (result: unknown, query: string): WebSearch => {
  const block = asRecord(result)
  return {
    id: asString(block.tool_use_id) ?? "",
    query,
    sources: asArray(block.content).flatMap((raw) => {
      const found = asRecord(raw)
      const url = asString(found.url)
      if (found.type !== "web_search_result" || url === undefined) return []
      const title = asString(found.title)
      return [title === undefined ? { url } : { url, title }]
    })
  }
}

/** The query of a `server_tool_use` block's input (an object, or its JSON text when streamed). */
export const queryOf = (input: unknown): string =>
  asString(asRecord(typeof input === "string" ? parseJsonObject(input) : input).query) ?? ""

/** The searches among a response's content blocks, in order. */
export const webSearchesOf = (blocks: ReadonlyArray<unknown>): ReadonlyArray<WebSearch> => {
  const queries = new Map<string, string>()
  const searches: Array<WebSearch> = []
  for (const raw of blocks) {
    const block = asRecord(raw)
    if (block.type === "server_tool_use" && typeof block.id === "string") queries.set(block.id, queryOf(block.input))
    if (block.type === "web_search_tool_result") {
      searches.push(webSearchOf(block, queries.get(asString(block.tool_use_id) ?? "") ?? ""))
    }
  }
  return searches
}
