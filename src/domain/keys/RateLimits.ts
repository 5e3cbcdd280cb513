/**
 * Per-key rate limits: requests per minute, tokens per minute and requests in flight. A missing figure on a key
 * falls back to the operator's default; a missing default means no limit of that kind.
 */
export interface RateLimits {
  readonly rpm: number | null
  readonly tpm: number | null
  readonly concurrency: number | null
}

export const noRateLimits: RateLimits = { rpm: null, tpm: null, concurrency: null }

/** The limits in force: the key's own figure where it has one, else the default's. */
export const effectiveRateLimits = (key: RateLimits, defaults: RateLimits): RateLimits => ({
  rpm: key.rpm ?? defaults.rpm,
  tpm: key.tpm ?? defaults.tpm,
  concurrency: key.concurrency ?? defaults.concurrency
})

export const rateLimitNames = ["rpm", "tpm", "concurrency"] as const

/** The problem with one figure, or undefined: a positive integer that fits a Postgres integer. */
export const rateLimitProblem = (value: unknown): string | undefined =>
  value === null || value === undefined
    ? undefined
    : typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 2_147_483_647
      ? "must be a positive integer (or null for the default)"
      : undefined
