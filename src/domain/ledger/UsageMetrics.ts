/**
 * The comparable part of a call's usage, whatever its family reported: tokens in and out, images delivered, seconds
 * of video. `UsageRecalculated` carries these (schema version 2) next to the family's own usage object, and the usage
 * report sums them. Pure: also the upcaster of version-1 events, which carried only the family's object.
 */
export interface UsageMetrics {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly images: number
  readonly videoSeconds: number
}

const count = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0

export const usageMetrics = (usage: unknown): UsageMetrics => {
  const u = (typeof usage === "object" && usage !== null ? usage : {}) as Record<string, unknown>
  const video = u.videoTokens !== undefined
  return {
    // Video tokens are output tokens: the vendor bills them as completion tokens.
    inputTokens: count(u.inputTokens ?? u.input_tokens ?? u.promptTokens ?? u.prompt_tokens),
    outputTokens: video ? count(Number(u.videoTokens)) : count(u.outputTokens ?? u.output_tokens),
    images: count(u.images),
    videoSeconds: video ? count(u.seconds) : 0
  }
}
