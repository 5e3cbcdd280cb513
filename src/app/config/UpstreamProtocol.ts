/**
 * The wire protocols an upstream can speak. Each fixes how its base URL is written, which the upstream client relies on
 * when it appends endpoint paths.
 */
import type { BuiltinUpstreamProtocol, UpstreamProtocol } from "@tollgate/plugin-spec"

export type { BuiltinUpstreamProtocol, UpstreamProtocol }

/** Every protocol of the plugin spec's `BuiltinUpstreamProtocol`, for validating the config (checked both ways below). */
export const UpstreamProtocols = [
  "openai",
  "anthropic",
  "gemini",
  "openai-responses",
  "openai-videos",
  "ark"
] as const satisfies ReadonlyArray<BuiltinUpstreamProtocol>

// Compiles only while every protocol of the spec is listed above.
const _listsEveryProtocol: [Exclude<BuiltinUpstreamProtocol, (typeof UpstreamProtocols)[number]>] extends [never]
  ? true
  : false = true

export const isUpstreamProtocol = (value: unknown): value is BuiltinUpstreamProtocol =>
  typeof value === "string" && (UpstreamProtocols as ReadonlyArray<string>).includes(value)

/** A protocol a plugin declares for its own vendor: lowercase letters, digits and dashes. */
export const isPluginProtocolName = (value: unknown): value is string =>
  typeof value === "string" && /^[a-z][a-z0-9-]{0,39}$/.test(value)

/**
 * Why a base URL does not fit its protocol, or undefined when it does. OpenAI-style SDKs put `/v1` in the base URL and
 * append `/chat/completions`; the Anthropic and Gemini SDKs take the host root and append `/v1/messages` or
 * `/v1beta/models/…`, so a `/v1` there would produce `/v1/v1/messages`.
 */
export const baseUrlProblem = (protocol: UpstreamProtocol, baseUrl: string): string | undefined => {
  if (!URL.canParse(baseUrl)) return "expected an absolute http(s) URL"
  const url = new URL(baseUrl)
  if (url.protocol !== "http:" && url.protocol !== "https:") return "expected an absolute http(s) URL"
  if (url.search !== "" || url.hash !== "") return "expected a URL without query or fragment"
  if (url.username !== "" || url.password !== "") return "expected a URL without credentials (use apiKey)"
  const path = url.pathname.replace(/\/+$/, "")
  switch (protocol) {
    case "openai":
    case "openai-responses":
    case "openai-videos":
      return path.endsWith("/v1") ? undefined : `expected a URL ending in /v1 for the ${protocol} protocol`
    case "ark":
      return path.endsWith("/api/v3") ? undefined : "expected a URL ending in /api/v3 for the ark protocol"
    case "anthropic":
    case "gemini":
      return /\/v1(beta)?$/.test(path)
        ? `expected the host root for the ${protocol} protocol (endpoint paths already start with /v1)`
        : undefined
    default:
      // A plugin's own protocol: its plugin appends its paths to the base URL as it sees fit.
      return undefined
  }
}
