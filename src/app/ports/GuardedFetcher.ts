/**
 * Fetching URLs the gateway did not choose (image links, video input links, video results, alert webhooks) under the address rule:
 * never a private, loopback or metadata address, redirects vetted hop by hop. A port: callers see this interface and
 * the fetch adapter implements it.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { Dispatcher } from "undici"
import type { FetchRefused } from "./FetchRefused.ts"

export interface FetchLimits {
  /** The largest body accepted; a longer one is aborted while streaming. */
  readonly maxBytes: number
  /** The whole fetch (DNS, every redirect, the body) must finish within this. */
  readonly timeoutMs: number
  /** Decides on the media type, lower case without parameters (`image/png`; `""` when the header is missing). */
  readonly accept: (contentType: string) => boolean
}

export interface FetchedResource {
  readonly bytes: Uint8Array
  /** Lower case, without parameters. */
  readonly contentType: string
  /** The URL the body came from, after redirects. */
  readonly finalUrl: string
}

/** A HEAD's answer: the final (non-redirect) status and media type. */
export interface ProbedResource {
  readonly status: number
  /** Lower case, without parameters; `""` when the header is missing. */
  readonly contentType: string
  readonly finalUrl: string
}

export interface OpenOptions {
  /** DNS, every redirect and the response headers must arrive within this. */
  readonly headersTimeoutMs: number
  /** The longest silence while the body streams. */
  readonly idleTimeoutMs: number
  /**
   * Origins (`https://ark.example:443`) trusted as configured by the operator: a hop to exactly one of them skips the
   * address rule (a vendor's result link on the vendor's own, perhaps private, API host). Any other hop is vetted.
   */
  readonly trustedOrigins?: ReadonlyArray<string> | undefined
  /** Aborts the request, the body's streaming included. */
  readonly signal?: AbortSignal | undefined
}

/** A response whose body has not been read: the caller consumes or discards it. */
export interface OpenedResource {
  /** The final (non-redirect) status, whatever it is. */
  readonly status: number
  readonly headers: Dispatcher.ResponseData["headers"]
  readonly body: Dispatcher.ResponseData["body"]
  readonly finalUrl: string
}

export interface PostOptions {
  /** Lower-case names; sent as given. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** DNS, the connection and the answer's headers must arrive within this. */
  readonly timeoutMs: number
}

export class GuardedFetcher extends Context.Service<
  GuardedFetcher,
  {
    /**
     * GETs a user-supplied http(s) URL under the address rule, following up to 5 redirects; fails with `FetchRefused`
     * for anything refused or broken (the HTTP layer answers it as a 400).
     */
    readonly fetch: (url: string, limits: FetchLimits) => Effect.Effect<FetchedResource, FetchRefused>
    /**
     * HEADs a URL under the same rule (redirects followed and vetted) and answers its final status and media type,
     * whatever the status; fails with `FetchRefused` when it may not be asked or no answer came within `timeoutMs`.
     */
    readonly probe: (url: string, timeoutMs: number) => Effect.Effect<ProbedResource, FetchRefused>
    /**
     * GETs a URL under the same rule (plus `trustedOrigins`) and hands over the final response with its body unread,
     * whatever its status: the caller streams or discards it. The connection closes once the body is done.
     */
    readonly open: (url: string, options: OpenOptions) => Effect.Effect<OpenedResource, FetchRefused>
    /**
     * POSTs `body` to a URL under the same rule (alert webhooks) and answers the status, whatever it is; a redirect is
     * not followed. Fails with `FetchRefused` when the URL may not be reached or no answer came within `timeoutMs`.
     */
    readonly post: (url: string, options: PostOptions) => Effect.Effect<{ readonly status: number }, FetchRefused>
    /**
     * Checks a URL under the address rule without sending anything: its form, its host name and the addresses the
     * name resolves to now (a URL stored for later fetches, refused up front; each fetch is checked again).
     */
    readonly check: (url: string, timeoutMs: number) => Effect.Effect<void, FetchRefused>
  }
>()("tollgate/app/ports/GuardedFetcher") {}
