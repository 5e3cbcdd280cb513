/**
 * Fault knobs: how the simulator misbehaves on purpose so gateway tests can exercise retries, timeouts and cut streams.
 * An instance holds default knobs; a request can override them with the `x-sim-fault` header. The cache knobs set
 * the prompt-cache usage text routes report, so tests can check cache billing.
 */

export interface FaultKnobs {
  /** Delay before the first byte (status line and headers). */
  readonly latencyMs?: number | undefined
  /** Delay between two SSE events. */
  readonly chunkDelayMs?: number | undefined
  /** Answer with this HTTP status and the vendor's error envelope instead of a reply. */
  readonly status?: number | undefined
  /** `retry-after` (seconds, may be fractional; `retry-after-ms` is sent too) on a forced error. */
  readonly retryAfterSeconds?: number | undefined
  /** Destroy the socket after this many SSE events (a non-streamed body is cut in half), without the final event. */
  readonly cutAfter?: number | undefined
  /** Send the vendor's in-band error event after this many SSE events, then end the stream. */
  readonly errorAfter?: number | undefined
  /** Stop writing after this many SSE events but keep the connection open (a non-streamed reply never comes). */
  readonly stallAfter?: number | undefined
  /** Keep streaming content forever (a non-streamed reply never comes). */
  readonly endless?: boolean | undefined
  /** Send a body (or one SSE event) that is not valid JSON. */
  readonly malformed?: boolean | undefined
  /** Target length of a text reply in tokens, before `max_tokens` bounds it. */
  readonly replyTokens?: number | undefined
  /** Of a text route's prompt tokens, how many the vendor reports as read from its cache (capped by the prompt). */
  readonly cacheReadTokens?: number | undefined
  /** How many prompt tokens the vendor reports as written to its cache (capped by what the reads leave). */
  readonly cacheWriteTokens?: number | undefined
  /** Of the cache writes, how many Anthropic reports with the 1-hour TTL (the rest have the 5-minute one). */
  readonly cacheWrite1hTokens?: number | undefined
}

/** The header that overrides the instance knobs for one request: `x-sim-fault: status=429, retry-after=1`. */
export const FAULT_HEADER = "x-sim-fault"

const numberKeys: Record<string, keyof FaultKnobs> = {
  latency: "latencyMs",
  "latency-ms": "latencyMs",
  "chunk-delay": "chunkDelayMs",
  "chunk-delay-ms": "chunkDelayMs",
  status: "status",
  "retry-after": "retryAfterSeconds",
  cut: "cutAfter",
  "error-after": "errorAfter",
  stall: "stallAfter",
  tokens: "replyTokens",
  "cache-read": "cacheReadTokens",
  "cache-write": "cacheWriteTokens",
  "cache-write-1h": "cacheWrite1hTokens"
}

const flagKeys: Record<string, keyof FaultKnobs> = { endless: "endless", malformed: "malformed" }

/**
 * Reads `x-sim-fault`. Entries are `key=value` or bare flags separated by `,` or `;`. `none` drops the instance knobs
 * for this request. Unknown keys and unparsable numbers are ignored so a typo never breaks an unrelated test.
 */
export const parseFaultHeader = (header: string): { readonly reset: boolean; readonly knobs: FaultKnobs } => {
  const knobs: Record<string, number | boolean> = {}
  let reset = false
  for (const entry of header.split(/[,;]/)) {
    const [rawKey = "", rawValue] = entry.split("=", 2).map((part) => part.trim())
    const key = rawKey.toLowerCase()
    if (key === "none") {
      reset = true
    } else if (key in flagKeys) {
      knobs[flagKeys[key]!] = rawValue === undefined || rawValue === "true" || rawValue === "1"
    } else if (key in numberKeys && rawValue !== undefined) {
      const value = Number(rawValue)
      if (Number.isFinite(value) && value >= 0) knobs[numberKeys[key]!] = value
    }
  }
  return { reset, knobs: knobs as FaultKnobs }
}

/** The knobs for one request: the instance knobs overridden key by key by the header. */
export const resolveFaults = (instance: FaultKnobs, header: string | undefined): FaultKnobs => {
  if (header === undefined || header.trim() === "") return instance
  const { reset, knobs } = parseFaultHeader(header)
  return reset ? knobs : { ...instance, ...knobs }
}
