/**
 * Streams a finished video from the link an upstream handed back (Ark's pre-signed object-store URL, on any host).
 * The link carries its own signature, so the upstream's API key is never sent with it. The body is streamed, not
 * buffered: videos run to hundreds of MB.
 *
 * An edge around undici's promise API, in the shape of UpstreamClient's request.
 */
import { Clock, Effect } from "effect"
import { type Dispatcher, request } from "undici"
import { discard, ResponseBody } from "../../adapters/upstream/ResponseBody.ts"
import {
  firstHeader,
  isRequestDefect,
  parseRetryAfter,
  reasonFromCause
} from "../../adapters/upstream/UpstreamError.ts"
import { type PluginFailure, pluginFailure, type VideoDownload } from "../ModelPlugin.ts"

export interface LinkOptions {
  /** The upstream that handed out the link, for logs and errors. */
  readonly upstreamName: string
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
    return pluginFailure(status, `the video link is busy (HTTP ${status}); retry later`, extra)
  }
  return pluginFailure(
    502,
    status >= 400 && status < 500
      ? `the video link was refused (HTTP ${status}); it may have expired`
      : `the video link failed with HTTP ${status}`,
    { ...extra, code: "video_download_failed" }
  )
}

export const downloadLink = (url: string, options: LinkOptions): Effect.Effect<VideoDownload, PluginFailure> =>
  Effect.gen(function* () {
    const parsed = URL.canParse(url) ? new URL(url) : undefined
    if (parsed === undefined || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
      return yield* Effect.fail(pluginFailure(502, "the upstream's video link is not an http(s) URL"))
    }
    const timeouts = { headersMs: options.headersTimeoutMs, idleMs: options.idleTimeoutMs }
    const failure = (cause: unknown) => reasonFromCause(cause, timeouts)
    const response = yield* Effect.callback<Dispatcher.ResponseData, PluginFailure>((resume, interrupted) => {
      request(parsed, {
        method: "GET",
        signal: AbortSignal.any([interrupted, options.signal]),
        headersTimeout: timeouts.headersMs,
        bodyTimeout: timeouts.idleMs
      }).then(
        (data) => {
          if (interrupted.aborted) discard(data.body)
          else resume(Effect.succeed(data))
        },
        (cause) => {
          if (isRequestDefect(cause)) return resume(Effect.die(cause))
          const reason = failure(cause)
          resume(
            Effect.fail(
              reason._tag === "Aborted"
                ? pluginFailure(499, "the download was cancelled")
                : pluginFailure(
                    reason._tag === "Timeout" ? 504 : 502,
                    `the video link could not be fetched: ${reason.message}`
                  )
            )
          )
        }
      )
    })
    if (response.statusCode < 200 || response.statusCode >= 300) {
      discard(response.body)
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.fail(linkFailure(response.statusCode, parseRetryAfter(response.headers, now)))
    }
    const body = new ResponseBody(response.body, options.upstreamName, failure)
    return {
      contentType: contentTypeOf(response.headers),
      contentLength: contentLengthOf(response.headers),
      body: body.chunks()
    } satisfies VideoDownload
  })
