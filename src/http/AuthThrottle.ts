/**
 * Failed-authentication throttling per client address: more than `maxFailures` (20) failed authentications — a
 * missing, malformed, unknown, revoked or expired API key, or a wrong admin token — from one address within
 * `windowMs` (a minute, sliding) and that address gets 429 with `retry-after` until enough failures age out.
 *
 * While an address is blocked every request from it is refused before its credential is looked at, a valid key
 * included: a guesser must learn nothing from a blocked address (not even that a guess was right), and a blocked
 * address costs no database lookup. Refused requests do not count as failures, so the block ends when the window
 * passes even if the address keeps knocking. Other addresses are never affected.
 *
 * The client address is the socket's peer. `x-forwarded-for` is read only when the operator trusts a proxy
 * (`TOLLGATE_TRUST_PROXY`): then it is walked from the right, skipping trusted proxies, and the first other address
 * is the client (the leftmost entries are whatever the client wrote and cannot be trusted). IPv6 clients are counted
 * per /64, the block a single host usually controls. The map is bounded (`maxAddresses`); entries expire with their
 * window, and when it is full the least recently failing address is dropped first.
 */
import { Clock, Context, Effect, Layer, Option, Result } from "effect"
import { HttpServerRequest } from "effect/http"
import { IpNetwork, NetAddress } from "effect/net"
import { type ApiError, apiError } from "./ApiError.ts"
import { traced } from "../app/Traced.ts"

/** Which proxies may tell us the client address: none (default), any direct peer, or peers in these networks. */
export type TrustProxy = "none" | "any" | ReadonlyArray<IpNetwork.IpNetwork>

export interface AuthThrottleOptions {
  readonly maxFailures: number
  readonly windowMs: number
  readonly maxAddresses: number
  readonly trustProxy: TrustProxy
}

export const defaultAuthThrottleOptions: AuthThrottleOptions = {
  maxFailures: 20,
  windowMs: 60_000,
  maxAddresses: 50_000,
  trustProxy: "none"
}

/**
 * Reads `TOLLGATE_TRUST_PROXY`: empty, `false`, `0` or `none` → off; `true`, `1` or `any` → the direct peer is a
 * proxy, whatever its address; otherwise a comma-separated list of proxy addresses or CIDRs. Undefined on a bad entry.
 */
export const parseTrustProxy = (text: string): TrustProxy | undefined => {
  const value = text.trim().toLowerCase()
  if (value === "" || value === "false" || value === "0" || value === "none") return "none"
  if (value === "true" || value === "1" || value === "any") return "any"
  const networks: Array<IpNetwork.IpNetwork> = []
  for (const entry of value.split(",").map((part) => part.trim())) {
    if (entry === "") continue
    const cidr = entry.includes("/") ? entry : `${entry}/${entry.includes(":") ? 128 : 32}`
    const parsed = IpNetwork.fromString(cidr)
    if (Result.isFailure(parsed)) return undefined
    networks.push(parsed.success)
  }
  return networks.length === 0 ? "none" : networks
}

const parseAddress = (text: string | undefined): NetAddress.IpAddress | undefined => {
  if (text === undefined) return undefined
  const bare = text.trim().replace(/^\[(.*)\]$/, "$1")
  const ip = NetAddress.ipFromString(bare)
  return Result.isSuccess(ip) ? NetAddress.toCanonical(ip.success) : undefined
}

/** The bucket an address is counted in: an IPv4 address itself, an IPv6 address's /64. */
const bucketOf = (address: NetAddress.IpAddress): string => {
  if (NetAddress.isIpv4Address(address)) return NetAddress.formatIp(address)
  const network = IpNetwork.fromAddress(address, 64)
  return Result.isSuccess(network) ? IpNetwork.format(network.success) : NetAddress.formatIp(address)
}

const isTrusted = (trust: TrustProxy, address: NetAddress.IpAddress): boolean =>
  trust === "any" ? true : trust === "none" ? false : trust.some((network) => IpNetwork.contains(network, address))

/** The address failures are counted against (`unknown` when the socket has none, e.g. a test request). */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest, trust: TrustProxy): string => {
  const peerText = Option.getOrUndefined(request.remoteAddress)
  const peer = parseAddress(peerText)
  if (peer === undefined) return peerText ?? "unknown"
  if (trust === "none" || !isTrusted(trust, peer)) return bucketOf(peer)
  const forwarded = request.headers["x-forwarded-for"]?.split(",") ?? []
  for (let index = forwarded.length - 1; index >= 0; index--) {
    const hop = parseAddress(forwarded[index])
    // An entry that is not an address means the chain cannot be read: count the proxy's own address instead.
    if (hop === undefined) return bucketOf(peer)
    if (index > 0 && trust !== "any" && isTrusted(trust, hop)) continue
    return bucketOf(hop)
  }
  return bucketOf(peer)
}

export class AuthThrottle extends Context.Service<
  AuthThrottle,
  {
    readonly options: AuthThrottleOptions
    /** Fails with 429 (and `retry-after`) while `address` is blocked. */
    readonly admit: (address: string) => Effect.Effect<void, ApiError>
    readonly recordFailure: (address: string) => Effect.Effect<void>
    /** No address has a failure on record: nobody can be blocked, so the caller need not work out its address. */
    readonly isQuiet: () => boolean
    /** How many addresses are tracked (tests check the bound). */
    readonly size: Effect.Effect<number>
  }
>()("tollgate/http/AuthThrottle") {
  static readonly layerWith = (options: AuthThrottleOptions): Layer.Layer<AuthThrottle> =>
    Layer.sync(AuthThrottle, () => make(options))

  static readonly layer: Layer.Layer<AuthThrottle> = AuthThrottle.layerWith(defaultAuthThrottleOptions)
}

const make = (options: AuthThrottleOptions): AuthThrottle["Service"] => {
  // Failure times per address, oldest first, at most `maxFailures` kept (older ones cannot matter). Map order is the
  // order of the last failure, so the first entry is the one to evict.
  const failures = new Map<string, Array<number>>()

  const recent = (address: string, now: number): Array<number> => {
    const times = failures.get(address)
    if (times === undefined) return []
    const live = times.filter((at) => at > now - options.windowMs)
    if (live.length === 0) failures.delete(address)
    else if (live.length !== times.length) failures.set(address, live)
    return live
  }

  const evict = (now: number) => {
    for (const [address, times] of failures) {
      if (failures.size < options.maxAddresses) return
      if (times[times.length - 1] <= now - options.windowMs) failures.delete(address)
    }
    while (failures.size >= options.maxAddresses) {
      const oldest = failures.keys().next()
      if (oldest.done === true) return
      failures.delete(oldest.value)
    }
  }

  const admit = Effect.fnUntraced(function* (address: string) {
    const now = yield* Clock.currentTimeMillis
    const live = recent(address, now)
    if (live.length < options.maxFailures) return
    // Blocked until the oldest counted failure leaves the window and one more attempt fits.
    const retryAfter = Math.max(1, Math.ceil((live[live.length - options.maxFailures] + options.windowMs - now) / 1000))
    return yield* apiError(
      429,
      `too many failed authentications from this address; retry after ${retryAfter} seconds`,
      {
        type: "rate_limit_error",
        code: "too_many_failed_authentications",
        headers: { "retry-after": String(retryAfter) }
      }
    )
  }, traced("AuthThrottle.admit"))

  const recordFailure = Effect.fnUntraced(function* (address: string) {
    const now = yield* Clock.currentTimeMillis
    const live = recent(address, now)
    failures.delete(address)
    if (failures.size >= options.maxAddresses) evict(now)
    failures.set(address, [...live, now].slice(-options.maxFailures))
  }, traced("AuthThrottle.recordFailure"))

  return { options, admit, recordFailure, isQuiet: () => failures.size === 0, size: Effect.sync(() => failures.size) }
}

/** A failure that says the credential was wrong (not that the store was down): these are what gets counted. */
const isAuthFailure = (error: unknown): boolean => {
  const tagged = error as { _tag?: string; status?: number }
  return tagged._tag === "KeyRejected" || (tagged._tag === "ApiError" && tagged.status === 401)
}

/** Runs a credential check for the calling address: refused while the address is blocked, failures counted. */
export const throttled = <A, E, R>(check: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const throttle = yield* AuthThrottle
    const request = yield* HttpServerRequest.HttpServerRequest
    // Parsing the address (and the proxy chain) is only needed once some address has failed: until then nobody is
    // blocked, and a failure works its address out when it is recorded.
    const address = () => clientAddress(request, throttle.options.trustProxy)
    if (!throttle.isQuiet()) yield* throttle.admit(address())
    return yield* check.pipe(
      Effect.tapError((error) => (isAuthFailure(error) ? throttle.recordFailure(address()) : Effect.void))
    )
  })
