/**
 * Streams a finished video from the link an upstream handed back (Ark's pre-signed object-store URL, on any host).
 * The link carries its own signature, so the upstream's API key is never sent with it. The body is streamed, not
 * buffered: videos run to hundreds of MB.
 *
 * The link is the vendor's word, not the operator's, so it is fetched through the guarded fetcher like any other URL
 * the gateway did not choose: every hop must lead to a public address (or an allow-listed one), except the origin of
 * the upstream that handed it out, which the operator configured. A link refused by that rule fails with
 * {@link VIDEO_LINK_REFUSED}: asking again cannot change the answer.
 */
import { Clock, Effect } from "effect"
import type { FetchRefused } from "../../app/ports/FetchRefused.ts"
import type { GuardedFetcher } from "../../app/ports/GuardedFetcher.ts"
import { discard, ResponseBody } from "../../adapters/upstream/ResponseBody.ts"
import { firstHeader, parseRetryAfter, reasonFromCause } from "../../adapters/upstream/UpstreamError.ts"
import { type PluginFailure, pluginFailure, type VideoDownload } from "../ModelPlugin.ts"

/** The code of a download the guard refused (a private address, another scheme): final, not worth a retry. */
export const VIDEO_LINK_REFUSED = "video_link_refused"

export interface LinkOptions {
  /** The upstream that handed out the link, for logs and errors. */
  readonly upstreamName: string
  /** That upstream's base URL: its origin is trusted, as configured by the operator. */
  readonly upstreamBaseUrl: string
  readonly headersTimeoutMs: number
  readonly idleTimeoutMs: number
  readonly signal: AbortSignal
}

/** `content-length` as a count of bytes, or null when absent or unreadable. */
export const contentLengthOf = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): number | null => {
  const value = firstHeader(headers, "content-length")?.trim()
  if (value === undefined || !/^[0-9]+$/.test(value)) return null
  const length = Number(value)
  return Number.isSafeInteger(length) ? length : null
}

export const contentTypeOf = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>): string =>
  firstHeader(headers, "content-type") ?? "application/octet-stream"

const linkFailure = (status: number, retryAfter: number | undefined): PluginFailure => {
  const extra = retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }
  if (status === 429 || status === 503) {
    return pluginFailure(
      status === 429 ? "rate_limited" : "overloaded",
      `the video link is busy (HTTP ${status}); retry later`,
      {
        ...extra,
        upstreamStatus: status
      }
    )
  }
  return pluginFailure(
    "unavailable",
    status >= 400 && status < 500
      ? `the video link was refused (HTTP ${status}); it may have expired`
      : `the video link failed with HTTP ${status}`,
    { ...extra, code: "video_download_failed", upstreamStatus: status }
  )
}

/** Address and scheme refusals are final; anything else (DNS, a timeout, a reset) may pass on a later try. */
const refusedFailure = (refused: FetchRefused): PluginFailure => {
  switch (refused.reason) {
    case "invalid-url":
    case "scheme":
    case "credentials":
    case "blocked-host":
    case "blocked-address":
      return pluginFailure("unavailable", `the upstream's video link was refused: ${refused.message}`, {
        code: VIDEO_LINK_REFUSED
      })
    case "timeout":
      return pluginFailure("timeout", `the video link could not be fetched: ${refused.message}`)
    default:
      return pluginFailure("unavailable", `the video link could not be fetched: ${refused.message}`)
  }
}

const originOf = (url: string): ReadonlyArray<string> => (URL.canParse(url) ? [new URL(url).origin] : [])

export const downloadLink = (
  links: GuardedFetcher["Service"],
  url: string,
  options: LinkOptions
): Effect.Effect<VideoDownload, PluginFailure> =>
  Effect.gen(function* () {
    const timeouts = { headersMs: options.headersTimeoutMs, idleMs: options.idleTimeoutMs }
    const response = yield* links
      .open(url, {
        headersTimeoutMs: options.headersTimeoutMs,
        idleTimeoutMs: options.idleTimeoutMs,
        trustedOrigins: originOf(options.upstreamBaseUrl),
        signal: options.signal
      })
      .pipe(Effect.mapError(refusedFailure))
    if (response.status < 200 || response.status >= 300) {
      discard(response.body)
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.fail(linkFailure(response.status, parseRetryAfter(response.headers, now)))
    }
    const body = new ResponseBody(response.body, options.upstreamName, (cause) => reasonFromCause(cause, timeouts))
    return {
      contentType: contentTypeOf(response.headers),
      contentLength: contentLengthOf(response.headers),
      body: body.chunks()
    } satisfies VideoDownload
  })
