/**
 * The plugin contract as the core uses it. The types are `@tollgate/plugin-spec`'s, one versioned module per kind, so
 * what a plugin sees is defined in one place that the core cannot change by accident; this module adds the few values
 * the core's own plugins share (failure constructors, format lists).
 */
import type { FailureReason, PluginFailure } from "@tollgate/plugin-spec"

export type * from "@tollgate/plugin-spec"

export const TRANSCRIPTION_FORMATS = ["json", "text", "srt", "verbose_json", "vtt"] as const

export const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const

/** A plugin failure; `src/http` maps its reason to the status and envelope of the protocol the client called. */
export const pluginFailure = (
  reason: FailureReason,
  message: string,
  extra: {
    readonly retryAfterSeconds?: number | undefined
    readonly detail?: string | undefined
    readonly code?: string | undefined
    readonly param?: string | undefined
    readonly upstreamStatus?: number | undefined
  } = {}
): PluginFailure => ({ _tag: "PluginFailure", reason, message, ...extra })

/**
 * Whether an upstream's answer (its status and body) says it refused the gateway's credentials: 401 and 403, and
 * Gemini's answer to a wrong key, a 400 whose reason is `API_KEY_INVALID`. Plugins word the failure by it; routing
 * disables the upstream by it.
 */
export const refusedCredentials = (status: number, body: string | undefined): boolean =>
  status === 401 || status === 403 || (status === 400 && body !== undefined && body.includes("API_KEY_INVALID"))

/** Whether a failure says the request itself was refused (its hold is released as `rejected`, not `failed`). */
export const isRejection = (failure: PluginFailure): boolean => failure.reason === "invalid_request"

/** Whether trying again later may succeed. */
export const isRetryable = (failure: PluginFailure): boolean =>
  failure.reason === "rate_limited" ||
  failure.reason === "overloaded" ||
  failure.reason === "unavailable" ||
  failure.reason === "timeout"
