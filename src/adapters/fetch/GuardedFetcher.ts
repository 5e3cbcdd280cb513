/**
 * Fetches user-supplied URLs (input images) without letting them reach the gateway's own network. Every hop is
 * checked: the scheme, the host name, every address it resolves to (AddressPolicy.ts); the connection then goes to the
 * vetted addresses only (a pinned `lookup`), so a DNS answer that changes between check and connect cannot redirect it.
 * Redirects are followed by hand and re-checked; the body is capped while it streams; one deadline covers it all.
 *
 * This module wraps undici and node:dns, so the Promise and stream callbacks live here.
 */
import { discard } from "../upstream/ResponseBody.ts"
import { lookup as systemLookup } from "node:dns/promises"
import type { LookupFunction } from "node:net"
import { Context, Duration, Effect, Layer } from "effect"
import { Agent, type Dispatcher, request } from "undici"
import {
  type AllowList,
  allowsAddress,
  allowsHost,
  classifyAddress,
  isMetadataHost,
  normalizeHost,
  parseAllowList,
  unbracket
} from "./AddressPolicy.ts"
import { FetchRefused, type FetchRefusedReason, shownUrl } from "./FetchRefused.ts"
import { traced } from "../../app/Traced.ts"

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

export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Resolves a host name to all its addresses, as `dns.promises.lookup(name, { all: true })` does. */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>

export interface GuardedFetcherOptions {
  /**
   * Host names, addresses and CIDRs (`images.internal`, `127.0.0.1`, `10.0.0.0/8`) that bypass the address rule. An
   * allowed host name skips the check of the addresses it resolves to; an allowed range admits those addresses under
   * any name.
   */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** Replaces the system resolver (tests map names to chosen addresses). */
  readonly lookup?: Resolver | undefined
  /** Default 5. */
  readonly maxRedirects?: number | undefined
}

export const DEFAULT_MAX_REDIRECTS = 5
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
const USER_AGENT = "Tollgate-ImageFetch/0.1"

const defaultResolver: Resolver = (hostname) => systemLookup(hostname, { all: true, verbatim: true })

type Hop =
  | { readonly _tag: "Redirect"; readonly location: string }
  | { readonly _tag: "Done"; readonly resource: FetchedResource }

const firstHeader = (headers: Dispatcher.ResponseData["headers"], name: string): string | undefined => {
  const value = headers[name]
  return typeof value === "string" ? value : value?.[0]
}

const mediaType = (header: string | undefined): string => (header ?? "").split(";")[0]!.trim().toLowerCase()

const isIpLiteral = (host: string): boolean =>
  /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || (host.includes(":") && !host.includes("/"))

/** A `lookup` that answers every connect with the vetted addresses and never asks DNS again. */
const pinnedLookup =
  (addresses: ReadonlyArray<ResolvedAddress>): LookupFunction =>
  (_hostname, options, callback) => {
    if (options.all === true) {
      callback(
        null,
        addresses.map(({ address, family }) => ({ address, family }))
      )
      return
    }
    callback(null, addresses[0]!.address, addresses[0]!.family)
  }

const errorCode = (cause: unknown): string => {
  if (typeof cause !== "object" || cause === null) return ""
  const code = (cause as { readonly code?: unknown }).code
  if (typeof code === "string") return code
  const errors = (cause as { readonly errors?: unknown }).errors
  return Array.isArray(errors) && errors.length > 0 ? errorCode(errors[0]) : ""
}

/** Reads a body up to `maxBytes`; `undefined` (and the body destroyed) once it grows past that. */
const readCapped = (
  body: Dispatcher.ResponseData["body"],
  maxBytes: number,
  signal: AbortSignal
): Promise<Uint8Array | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const abort = () => {
      discard(body)
      reject(signal.reason)
    }
    signal.addEventListener("abort", abort, { once: true })
    body.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        signal.removeEventListener("abort", abort)
        discard(body)
        resolve(undefined)
        return
      }
      chunks.push(chunk)
    })
    body.on("end", () => {
      signal.removeEventListener("abort", abort)
      resolve(Buffer.concat(chunks))
    })
    body.on("error", (error) => {
      signal.removeEventListener("abort", abort)
      reject(error)
    })
  })

/** The fetcher's implementation; `GuardedFetcher.layer` wraps it as a service. */
export const makeGuardedFetcher = (options: GuardedFetcherOptions = {}): GuardedFetcher["Service"] => {
  const allow: AllowList = parseAllowList(options.allowHosts ?? [])
  const resolve = options.lookup ?? defaultResolver
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS

  const hops = (url: string, limits: FetchLimits) => {
    const refuse = (reason: FetchRefusedReason, detail: string) =>
      Effect.fail(new FetchRefused({ reason, url: shownUrl(url), detail }))

    const target = (raw: string, base: URL | undefined, via: string): Effect.Effect<URL, FetchRefused> => {
      if (!URL.canParse(raw, base))
        return refuse(base === undefined ? "invalid-url" : "redirect", `${via}not a valid URL`)
      const parsed = new URL(raw, base)
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
        return refuse("scheme", `${via}only http and https URLs can be fetched, not ${parsed.protocol}`)
      }
      if (parsed.username !== "" || parsed.password !== "") {
        return refuse("credentials", `${via}URLs with a user name or password are not fetched`)
      }
      return Effect.succeed(parsed)
    }

    const vet = Effect.fnUntraced(function* (target: URL, via: string) {
      const host = normalizeHost(target.hostname)
      const literal = unbracket(target.hostname)
      const hostAllowed = allowsHost(allow, host)
      if (!hostAllowed && isMetadataHost(host)) {
        return yield* refuse("blocked-host", `${via}${host} is a cloud metadata service`)
      }
      const addresses: ReadonlyArray<ResolvedAddress> = isIpLiteral(literal)
        ? [{ address: literal, family: literal.includes(":") ? 6 : 4 }]
        : yield* Effect.tryPromise({
            try: () => resolve(target.hostname),
            catch: (cause) =>
              new FetchRefused({
                reason: "dns",
                url: shownUrl(url),
                detail: `${via}cannot resolve ${host}${errorCode(cause) === "" ? "" : ` (${errorCode(cause)})`}`
              })
          })
      if (addresses.length === 0) return yield* refuse("dns", `${via}${host} has no addresses`)
      if (hostAllowed) return addresses
      for (const { address } of addresses) {
        if (allowsAddress(allow, address)) continue
        const kind = classifyAddress(address)
        if (kind === "public") continue
        return yield* refuse(
          "blocked-address",
          literal === address
            ? `${via}${address} is a ${kind} address`
            : `${via}${host} resolves to ${address}, a ${kind} address`
        )
      }
      return addresses
    })

    const exchange = (target: URL, addresses: ReadonlyArray<ResolvedAddress>, via: string) =>
      Effect.gen(function* () {
        const agent = yield* Effect.acquireRelease(
          Effect.sync(() => new Agent({ connect: { lookup: pinnedLookup(addresses) } })),
          (agent) => Effect.promise(() => agent.destroy().catch(() => undefined))
        )
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            request(target, {
              method: "GET",
              dispatcher: agent,
              signal,
              headers: { "user-agent": USER_AGENT, accept: "*/*", "accept-encoding": "identity" }
            }),
          catch: (cause) =>
            new FetchRefused({
              reason: "network",
              url: shownUrl(url),
              detail: `${via}cannot connect to ${target.host} (${errorCode(cause) || "network error"})`
            })
        })
        const status = response.statusCode
        if (REDIRECT_STATUSES.has(status)) {
          const location = firstHeader(response.headers, "location")
          if (location === undefined) return yield* refuse("redirect", `${via}HTTP ${status} without a location`)
          return { _tag: "Redirect", location } satisfies Hop as Hop
        }
        if (status < 200 || status > 299)
          return yield* refuse("http-status", `${via}the server answered HTTP ${status}`)
        const contentType = mediaType(firstHeader(response.headers, "content-type"))
        if (!limits.accept(contentType)) {
          return yield* refuse(
            "content-type",
            `${via}content type ${contentType === "" ? "(none)" : contentType} is not accepted`
          )
        }
        const tooLarge = `${via}the body is larger than ${limits.maxBytes} bytes`
        const declared = Number(firstHeader(response.headers, "content-length"))
        if (Number.isFinite(declared) && declared > limits.maxBytes) return yield* refuse("too-large", tooLarge)
        const bytes = yield* Effect.tryPromise({
          try: (signal) => readCapped(response.body, limits.maxBytes, signal),
          catch: (cause) =>
            new FetchRefused({
              reason: "network",
              url: shownUrl(url),
              detail: `${via}the connection broke while reading the body (${errorCode(cause) || "network error"})`
            })
        })
        if (bytes === undefined) return yield* refuse("too-large", tooLarge)
        return { _tag: "Done", resource: { bytes, contentType, finalUrl: target.href } } satisfies Hop as Hop
      }).pipe(Effect.scoped)

    return Effect.gen(function* () {
      let current = yield* target(url, undefined, "")
      for (let redirects = 0; ; redirects++) {
        const via = redirects === 0 ? "" : `redirect to ${shownUrl(current.href)}: `
        const addresses = yield* vet(current, via)
        const hop = yield* exchange(current, addresses, via)
        if (hop._tag === "Done") return hop.resource
        if (redirects >= maxRedirects) return yield* refuse("redirect", `more than ${maxRedirects} redirects`)
        current = yield* target(hop.location, current, `redirect to ${shownUrl(hop.location)}: `)
      }
    })
  }

  return {
    fetch: Effect.fnUntraced(function* (url: string, limits: FetchLimits) {
      return yield* hops(url, limits).pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(limits.timeoutMs),
          orElse: () =>
            Effect.fail(
              new FetchRefused({
                reason: "timeout",
                url: shownUrl(url),
                detail: `no complete answer within ${limits.timeoutMs} ms`
              })
            )
        })
      )
    }, traced("GuardedFetcher.fetch"))
  }
}

export class GuardedFetcher extends Context.Service<
  GuardedFetcher,
  {
    /**
     * GETs a user-supplied http(s) URL under the address rule, following up to 5 redirects; fails with `FetchRefused`
     * for anything refused or broken (the HTTP layer answers it as a 400).
     */
    readonly fetch: (url: string, limits: FetchLimits) => Effect.Effect<FetchedResource, FetchRefused>
  }
>()("tollgate/adapters/fetch/GuardedFetcher") {
  /** `allowHosts` lifts the address rule for the listed names and ranges; nothing is allowed by default. */
  static readonly layer = (options: GuardedFetcherOptions = {}): Layer.Layer<GuardedFetcher> =>
    Layer.sync(GuardedFetcher, () => GuardedFetcher.of(makeGuardedFetcher(options)))
}
