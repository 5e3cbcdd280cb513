/**
 * Gemini's Google Search grounding for a request that asks for a hosted web search (a Responses client's
 * `web_search`, chat completions' `web_search_options`): the request gets a `{"googleSearch": {}}` tool, and the
 * candidate's `groundingMetadata` — the queries Gemini searched for (`webSearchQueries`) and the pages it grounded the
 * answer on (`groundingChunks[].web`) — is read back as one WebSearch per query. Gemini does not say which query found
 * which page, so each search carries every page. Each query counts as one search in the usage.
 *
 * Gemini models before Gemini 3 refuse a built-in tool alongside function declarations (400 INVALID_ARGUMENT), so a
 * request that also has function tools is sent without the search: the search is left out with a note instead
 * (HostedTools.ts).
 */
import type { ChatRequest, Usage, WebSearch } from "./ChatIR.ts"
import { asArray, asRecord, asString } from "./json.ts"
import { wantsWebSearch } from "./anthropicWebSearch.ts"

export const GOOGLE_SEARCH_TOOL = { googleSearch: {} }

/** Whether a Gemini upstream runs the request's hosted web search: asked for, and no function tools beside it. */
export const geminiRunsWebSearch = (request: ChatRequest): boolean =>
  wantsWebSearch(request) && request.tools.length === 0

/** Google's JSON accepts snake_case field names too. */
const either = (record: unknown, camel: string, snake: string): unknown =>
  asRecord(record)[camel] ?? asRecord(record)[snake]

/** What one candidate's grounding metadata says was searched for and found (empty when it was not grounded). */
export interface Grounding {
  readonly queries: ReadonlyArray<string>
  readonly sources: ReadonlyArray<{ readonly url: string; readonly title?: string }>
}

export const emptyGrounding: Grounding = { queries: [], sources: [] }

/** A candidate's `groundingMetadata`, merged into what earlier chunks gave (queries and pages each counted once). */
export const addGrounding = (seen: Grounding, candidate: unknown): Grounding => {
  const metadata = either(candidate, "groundingMetadata", "grounding_metadata")
  const queries = [...seen.queries]
  for (const raw of asArray(either(metadata, "webSearchQueries", "web_search_queries"))) {
    const query = asString(raw)
    if (query !== undefined && query !== "" && !queries.includes(query)) queries.push(query)
  }
  const sources = [...seen.sources]
  for (const chunk of asArray(either(metadata, "groundingChunks", "grounding_chunks"))) {
    const web = asRecord(asRecord(chunk).web)
    const url = asString(web.uri)
    if (url === undefined || sources.some((s) => s.url === url)) continue
    const title = asString(web.title)
    sources.push(title === undefined ? { url } : { url, title })
  }
  return { queries, sources }
}

/** The searches a grounding reports, one per query, with ids stable within the response. */
export const webSearchesOf = (grounding: Grounding, responseId: string): ReadonlyArray<WebSearch> =>
  grounding.queries.map((query, i) => ({ id: `gs_${responseId}_${i}`, query, sources: grounding.sources }))

/** The usage with the searches counted (one per query), when there were any. */
export const withSearches = (usage: Usage, grounding: Grounding): Usage =>
  grounding.queries.length > 0 ? { ...usage, webSearches: grounding.queries.length } : usage
