/**
 * Fetches URLs the gateway did not choose (input images, video input links, a vendor's finished-video link) without
 * letting them reach the gateway's own network. Every hop is checked: the scheme, the host name, every address it
 * resolves to (AddressPolicy.ts); the connection then goes to the vetted addresses only (a pinned `lookup`), so a DNS
 * answer that changes between check and connect cannot redirect it. Redirects are followed by hand and re-checked.
 * `fetch` caps the body while it streams under one deadline; `probe` asks for the headers only (HEAD); `open` hands the
 * body over unread, for downloads too large to hold in memory.
 *
 * This module wraps undici and node:dns, so the Promise and stream callbacks live here.
 */
import { discard } from "../upstream/ResponseBody.ts"
import { Duration, Effect, Layer } from "effect"
import type { Dispatcher } from "undici"
import { loadUndici } from "../upstream/LazyUndici.ts"
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
import { FetchRefused, type FetchRefusedReason, shownUrl } from "../../app/ports/FetchRefused.ts"
import {
  type FetchedResource,
  type FetchLimits,
  GuardedFetcher,
  type OpenedResource,
  type OpenOptions,
  type PostOptions,
  type ProbedResource
} from "../../app/ports/GuardedFetcher.ts"
import { traced } from "../../app/Traced.ts"
import {
  DEFAULT_MAX_REDIRECTS,
  REDIRECT_STATUSES,
  type Step,
  USER_AGENT,
  defaultResolver,
  errorCode,
  firstHeader,
  isIpLiteral,
  mediaType,
  pinnedLookup,
  readCapped
} from "./FetchWire.ts"

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

/** The fetcher's implementation; `GuardedFetcher.layer` wraps it as a service. */
export const makeGuardedFetcher = (options: GuardedFetcherOptions = {}): GuardedFetcher["Service"] => {
  const allow: AllowList = parseAllowList(options.allowHosts ?? [])
  const resolve = options.lookup ?? defaultResolver
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS

  /** One request's hops: where it may go, and the exchange on each one, redirects re-vetted. */
  const hopsOf = (url: string, trustedOrigins: ReadonlyArray<string>) => {
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
      const hostAllowed = allowsHost(allow, host) || trustedOrigins.includes(target.origin)
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

    /**
     * Sends one request to vetted addresses. The agent lives in the caller's scope; `keep` leaves it open (closing
     * gracefully once the body is done) when the scope ends successfully, for a body handed over unread.
     */
    const exchange = (
      target: URL,
      addresses: ReadonlyArray<ResolvedAddress>,
      via: string,
      request_: {
        readonly method: "GET" | "HEAD" | "POST"
        readonly keep: boolean
        readonly open?: OpenOptions | undefined
        readonly send?: PostOptions | undefined
      }
    ) =>
      Effect.gen(function* () {
        const { Agent, request } = yield* loadUndici
        const agent = yield* Effect.acquireRelease(
          Effect.sync(() => new Agent({ connect: { lookup: pinnedLookup(addresses) } })),
          (agent, exit) =>
            request_.keep && exit._tag === "Success"
              ? Effect.sync(() => {
                  agent.close().catch(() => undefined)
                })
              : Effect.promise(() => agent.destroy().catch(() => undefined))
        )
        const open = request_.open
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            request(target, {
              method: request_.method,
              dispatcher: agent,
              signal: open?.signal === undefined ? signal : AbortSignal.any([signal, open.signal]),
              headers: {
                "user-agent": USER_AGENT,
                accept: "*/*",
                "accept-encoding": "identity",
                ...request_.send?.headers
              },
              ...(request_.send === undefined ? {} : { body: request_.send.body }),
              ...(open === undefined ? {} : { headersTimeout: open.headersTimeoutMs, bodyTimeout: open.idleTimeoutMs })
            }),
          catch: (cause) =>
            new FetchRefused({
              reason: errorCode(cause) === "UND_ERR_HEADERS_TIMEOUT" ? "timeout" : "network",
              url: shownUrl(url),
              detail: `${via}cannot connect to ${target.host} (${errorCode(cause) || "network error"})`
            })
        })
        if (REDIRECT_STATUSES.has(response.statusCode)) {
          discard(response.body)
          const location = firstHeader(response.headers, "location")
          if (location === undefined) {
            return yield* refuse("redirect", `${via}HTTP ${response.statusCode} without a location`)
          }
          return { _tag: "Redirect", location } as const
        }
        return { _tag: "Final", response } as const
      })

    /**
     * Follows redirects to the final response, which `use` consumes (in the last hop's scope). `keep`: the last hop's
     * connection stays open after `use` for the body it hands on.
     */
    const follow = <A>(
      method: "GET" | "HEAD",
      keep: boolean,
      open: OpenOptions | undefined,
      use: (response: Dispatcher.ResponseData, target: URL, via: string) => Effect.Effect<A, FetchRefused>
    ): Effect.Effect<A, FetchRefused> =>
      Effect.gen(function* () {
        let current = yield* target(url, undefined, "")
        for (let redirects = 0; ; redirects++) {
          const via = redirects === 0 ? "" : `redirect to ${shownUrl(current.href)}: `
          const addresses = yield* vet(current, via)
          const hop = current
          const step: Step<A> = yield* Effect.scoped(
            Effect.flatMap(
              exchange(hop, addresses, via, { method, keep, open }),
              (outcome): Effect.Effect<Step<A>, FetchRefused> =>
                outcome._tag === "Redirect"
                  ? Effect.succeed({ _tag: "Redirect", location: outcome.location })
                  : Effect.map(use(outcome.response, hop, via), (value) => ({ _tag: "Done", value }))
            )
          )
          if (step._tag === "Done") return step.value
          if (redirects >= maxRedirects) return yield* refuse("redirect", `more than ${maxRedirects} redirects`)
          current = yield* target(step.location, current, `redirect to ${shownUrl(step.location)}: `)
        }
      })

    /** One POST to the URL's vetted addresses; a redirect is not followed (the answer is its status). */
    const post = (send: PostOptions) =>
      Effect.scoped(
        Effect.gen(function* () {
          const hop = yield* target(url, undefined, "")
          const addresses = yield* vet(hop, "")
          const outcome = yield* exchange(hop, addresses, "", { method: "POST", keep: false, send })
          if (outcome._tag === "Redirect") {
            return yield* refuse("redirect", "the server answered with a redirect, which is not followed for a POST")
          }
          discard(outcome.response.body)
          return { status: outcome.response.statusCode }
        })
      )

    /** The address rule alone: the URL, its host name and the addresses it resolves to, without connecting. */
    const check = Effect.flatMap(target(url, undefined, ""), (first) => vet(first, ""))

    return { refuse, follow, post, check }
  }

  const deadline =
    (url: string, timeoutMs: number) =>
    <A>(effect: Effect.Effect<A, FetchRefused>): Effect.Effect<A, FetchRefused> =>
      effect.pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(timeoutMs),
          orElse: () =>
            Effect.fail(
              new FetchRefused({
                reason: "timeout",
                url: shownUrl(url),
                detail: `no complete answer within ${timeoutMs} ms`
              })
            )
        })
      )

  const readBody = (url: string, limits: FetchLimits) => {
    const { refuse } = hopsOf(url, [])
    return (response: Dispatcher.ResponseData, target: URL, via: string) =>
      Effect.gen(function* () {
        const status = response.statusCode
        if (status < 200 || status > 299) {
          discard(response.body)
          return yield* refuse("http-status", `${via}the server answered HTTP ${status}`)
        }
        const contentType = mediaType(firstHeader(response.headers, "content-type"))
        if (!limits.accept(contentType)) {
          discard(response.body)
          return yield* refuse(
            "content-type",
            `${via}content type ${contentType === "" ? "(none)" : contentType} is not accepted`
          )
        }
        const tooLarge = `${via}the body is larger than ${limits.maxBytes} bytes`
        const declared = Number(firstHeader(response.headers, "content-length"))
        if (Number.isFinite(declared) && declared > limits.maxBytes) {
          discard(response.body)
          return yield* refuse("too-large", tooLarge)
        }
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
        return { bytes, contentType, finalUrl: target.href } satisfies FetchedResource
      })
  }

  return {
    fetch: Effect.fnUntraced(function* (url: string, limits: FetchLimits) {
      return yield* hopsOf(url, [])
        .follow("GET", false, undefined, readBody(url, limits))
        .pipe(deadline(url, limits.timeoutMs))
    }, traced("GuardedFetcher.fetch")),

    probe: Effect.fnUntraced(function* (url: string, timeoutMs: number) {
      return yield* hopsOf(url, [])
        .follow("HEAD", false, undefined, (response, target) =>
          Effect.sync(() => {
            discard(response.body)
            return {
              status: response.statusCode,
              contentType: mediaType(firstHeader(response.headers, "content-type")),
              finalUrl: target.href
            } satisfies ProbedResource
          })
        )
        .pipe(deadline(url, timeoutMs))
    }, traced("GuardedFetcher.probe")),

    open: Effect.fnUntraced(function* (url: string, options: OpenOptions) {
      return yield* hopsOf(url, options.trustedOrigins ?? [])
        .follow("GET", true, options, (response, target) =>
          Effect.succeed({
            status: response.statusCode,
            headers: response.headers,
            body: response.body,
            finalUrl: target.href
          } satisfies OpenedResource)
        )
        .pipe(deadline(url, options.headersTimeoutMs))
    }, traced("GuardedFetcher.open")),

    post: Effect.fnUntraced(function* (url: string, options: PostOptions) {
      return yield* hopsOf(url, []).post(options).pipe(deadline(url, options.timeoutMs))
    }, traced("GuardedFetcher.post")),

    check: Effect.fnUntraced(function* (url: string, timeoutMs: number) {
      yield* hopsOf(url, []).check.pipe(deadline(url, timeoutMs))
    }, traced("GuardedFetcher.check"))
  }
}

/** `allowHosts` lifts the address rule for the listed names and ranges; nothing is allowed by default. */
export const guardedFetcherLayer = (options: GuardedFetcherOptions = {}): Layer.Layer<GuardedFetcher> =>
  Layer.sync(GuardedFetcher, () => GuardedFetcher.of(makeGuardedFetcher(options)))
