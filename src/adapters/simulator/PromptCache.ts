/**
 * Prompt-cache usage as a vendor reports it, set by the `cacheReadTokens`, `cacheWriteTokens` and
 * `cacheWrite1hTokens` fault knobs. The route's prompt count stays the total the vendor saw; the knobs say how much
 * of it was read from the cache or written to it. Each dialect turns this into its own usage fields.
 */
import type { FaultKnobs } from "./Faults.ts"

/** The knobs a text route reads; a request's resolved `FaultKnobs` is one. */
export type CacheKnobs = Pick<FaultKnobs, "cacheReadTokens" | "cacheWriteTokens" | "cacheWrite1hTokens">

export interface PromptCache {
  /** Prompt tokens read from the cache. */
  readonly read: number
  /** Prompt tokens written to the cache. */
  readonly write: number
  /** Of `write`, the tokens written with Anthropic's 1-hour TTL; the rest have the 5-minute one. */
  readonly write1h: number
}

const whole = (value: number | undefined): number =>
  value === undefined || !Number.isFinite(value) || value <= 0 ? 0 : Math.floor(value)

/**
 * The cache usage of a prompt of `promptTokens` tokens. Reads are capped by the prompt, writes by what the reads left
 * (so read + write never exceeds the prompt) and 1-hour writes by the writes.
 */
export const promptCache = (knobs: CacheKnobs, promptTokens: number): PromptCache => {
  const read = Math.min(whole(knobs.cacheReadTokens), whole(promptTokens))
  const write = Math.min(whole(knobs.cacheWriteTokens), whole(promptTokens) - read)
  return { read, write, write1h: Math.min(whole(knobs.cacheWrite1hTokens), write) }
}
