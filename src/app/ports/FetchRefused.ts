/** Why the guarded fetcher would not, or could not, bring back a user-supplied URL. */
import { Schema } from "effect"

export const FetchRefusedReason = Schema.Literals([
  /** Not a parsable absolute URL. */
  "invalid-url",
  /** Not `http:` or `https:`. */
  "scheme",
  /** User name or password in the URL. */
  "credentials",
  /** The host name itself is refused (a cloud metadata name). */
  "blocked-host",
  /** The host is, or resolves to, a loopback, private, link-local, metadata or otherwise non-public address. */
  "blocked-address",
  /** The name did not resolve. */
  "dns",
  /** Connection refused, reset or failed TLS. */
  "network",
  /** A status other than 2xx or a followable redirect. */
  "http-status",
  /** More redirects than allowed, or a redirect without a usable `location`. */
  "redirect",
  /** The body is larger than `maxBytes`. */
  "too-large",
  /** The whole fetch, redirects and body included, took longer than `timeoutMs`. */
  "timeout",
  /** The response's content type is not accepted. */
  "content-type"
])

export type FetchRefusedReason = typeof FetchRefusedReason.Type

export class FetchRefused extends Schema.TaggedError<FetchRefused>()("FetchRefused", {
  reason: FetchRefusedReason,
  /** The URL the caller asked for (shortened when long). */
  url: Schema.String,
  /** A sentence a client can act on, e.g. `127.0.0.1 is a loopback address`. */
  detail: Schema.String
}) {
  override get message(): string {
    return `cannot fetch ${this.url}: ${this.detail}`
  }
}

const URL_SHOWN = 200

/** A URL short enough for an error message (a data URL can be megabytes). */
export const shownUrl = (url: string): string => (url.length <= URL_SHOWN ? url : `${url.slice(0, URL_SHOWN)}…`)
