/**
 * Credentials and endpoint paths per upstream protocol. Paths are relative to the upstream's base URL: OpenAI-style
 * base URLs already end in `/v1` (Ark's in `/api/v3`), Anthropic and Gemini ones are the host root, as their SDKs do.
 */
import { Redacted } from "effect"
import type { UpstreamConfig } from "../../app/OperatorConfig.ts"

export const ANTHROPIC_VERSION = "2023-06-01"

/**
 * An upstream as the client is handed it: the gateway's own (from the operator config, with its key) or a plugin's view
 * of one, which never carries the key (app/PluginBoundary.ts) and is sent without credentials.
 */
export type UpstreamTarget = Omit<UpstreamConfig, "apiKey"> & { readonly apiKey?: UpstreamConfig["apiKey"] | undefined }

/** The upstream's key in the clear, or "" when it has none. */
export const upstreamKey = (upstream: Pick<UpstreamTarget, "apiKey">): string =>
  upstream.apiKey === undefined ? "" : Redacted.value(upstream.apiKey)

/** Headers that carry the API key, by the upstream's `auth` or its protocol's default; they override the caller's. */
export const credentialHeaders = (
  upstream: Pick<UpstreamTarget, "protocol" | "apiKey" | "auth">
): Record<string, string> => {
  const key = upstreamKey(upstream)
  const auth = upstream.auth
  if (auth !== undefined) {
    if (auth.scheme === "header") return { [auth.name.toLowerCase()]: key }
    if (auth.scheme === "query") return {}
    return { authorization: `Bearer ${key}` }
  }
  switch (upstream.protocol) {
    case "anthropic":
      return { "x-api-key": key }
    case "gemini":
      return { "x-goog-api-key": key }
    default:
      // openai, openai-responses, openai-videos, ark, and a plugin's own protocol without an `auth` of its own.
      return { authorization: `Bearer ${key}` }
  }
}

/** The query parameter that carries the key for an upstream whose `auth` says so (`key=…`), or "". */
export const credentialQuery = (upstream: Pick<UpstreamTarget, "apiKey" | "auth">): string =>
  upstream.auth?.scheme === "query"
    ? `${encodeURIComponent(upstream.auth.name)}=${encodeURIComponent(upstreamKey(upstream))}`
    : ""

/** `path` with the credential query appended (after any query it has). */
export const withCredentialQuery = (path: string, query: string): string =>
  query === "" ? path : `${path}${path.includes("?") ? "&" : "?"}${query}`

/** Headers a protocol expects on every request unless the caller sets them (Anthropic wants a version date). */
export const protocolHeaders = (upstream: Pick<UpstreamConfig, "protocol">): Record<string, string> =>
  upstream.protocol === "anthropic" ? { "anthropic-version": ANTHROPIC_VERSION } : {}

/** Every header the protocol needs: {@link protocolHeaders} plus {@link credentialHeaders}. */
export const authHeaders = (
  upstream: Pick<UpstreamTarget, "protocol" | "apiKey" | "auth">
): Record<string, string> => ({
  ...protocolHeaders(upstream),
  ...credentialHeaders(upstream)
})

/** The full URL of `path` on an upstream, for logs and tests; the client itself joins paths the same way. */
export const upstreamUrl = (upstream: Pick<UpstreamConfig, "baseUrl">, path: string): string =>
  `${upstream.baseUrl.replace(/\/+$/, "")}${path}`

const segment = encodeURIComponent

/** Paths under an OpenAI base URL (`…/v1`). */
export const OpenAiPaths = {
  chatCompletions: "/chat/completions",
  responses: "/responses",
  embeddings: "/embeddings",
  imagesGenerations: "/images/generations",
  imagesEdits: "/images/edits",
  audioTranscriptions: "/audio/transcriptions",
  audioSpeech: "/audio/speech",
  models: "/models",
  videos: "/videos",
  video: (id: string) => `/videos/${segment(id)}`,
  videoContent: (id: string, variant = "video") => `/videos/${segment(id)}/content?variant=${segment(variant)}`
} as const

/** Paths under an Anthropic base URL (the host root). */
export const AnthropicPaths = {
  messages: "/v1/messages",
  countTokens: "/v1/messages/count_tokens"
} as const

/** Paths under a Gemini base URL (the host root); the colon belongs to the last segment. */
export const GeminiPaths = {
  generateContent: (model: string) => `/v1beta/models/${segment(model)}:generateContent`,
  streamGenerateContent: (model: string) => `/v1beta/models/${segment(model)}:streamGenerateContent?alt=sse`,
  countTokens: (model: string) => `/v1beta/models/${segment(model)}:countTokens`,
  batchEmbedContents: (model: string) => `/v1beta/models/${segment(model)}:batchEmbedContents`
} as const

/** Paths under an Ark base URL (`…/api/v3`). */
export const ArkPaths = {
  tasks: "/contents/generations/tasks",
  task: (id: string) => `/contents/generations/tasks/${segment(id)}`
} as const
