/**
 * The failed-authentication throttle: the sliding window (on the test clock), the bounded map, and how the client
 * address is read (the socket peer; `x-forwarded-for` only from a trusted proxy, walked from the right).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { TestClock } from "effect/testing"
import {
  AuthThrottle,
  clientAddress,
  defaultAuthThrottleOptions,
  parseTrustProxy,
  type TrustProxy
} from "../../src/http/AuthThrottle.ts"

const blocked = (exit: Exit.Exit<void, unknown>) => {
  if (Exit.isSuccess(exit)) return undefined
  const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
  return failure?.error as { status: number; options: { headers?: Record<string, string> } } | undefined
}

describe("AuthThrottle", () => {
  it.effect("admits 20 failures a minute, refuses the 21st attempt with 429 + retry-after, then lets go", () =>
    Effect.gen(function* () {
      const throttle = yield* AuthThrottle
      assert.isTrue(throttle.isQuiet(), "no failure yet: callers skip working out their address")
      for (let i = 0; i < 20; i++) {
        assert.isTrue(Exit.isSuccess(yield* Effect.exit(throttle.admit("1.2.3.4"))), `attempt ${i + 1}`)
        yield* throttle.recordFailure("1.2.3.4")
        yield* TestClock.adjust(Duration.millis(100))
      }
      assert.isFalse(throttle.isQuiet())
      const refused = blocked(yield* Effect.exit(throttle.admit("1.2.3.4")))
      assert.strictEqual(refused?.status, 429)
      // The first failure was at t=0, now is t=2000: it leaves the window in 58 s.
      assert.strictEqual(refused?.options.headers?.["retry-after"], "58")
      // Another address is not affected.
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(throttle.admit("5.6.7.8"))))
      // Refused attempts are not failures: once the oldest failure ages out, one attempt fits again.
      yield* TestClock.adjust(Duration.seconds(57))
      assert.isDefined(blocked(yield* Effect.exit(throttle.admit("1.2.3.4"))))
      yield* TestClock.adjust(Duration.seconds(1))
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(throttle.admit("1.2.3.4"))))
      yield* TestClock.adjust(Duration.seconds(60))
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(throttle.admit("1.2.3.4"))))
      assert.strictEqual(yield* throttle.size, 0, "expired entries are dropped")
      assert.isTrue(throttle.isQuiet())
    }).pipe(Effect.provide(AuthThrottle.layer))
  )

  it.effect("keeps at most maxAddresses entries, dropping the expired and then the least recent", () =>
    Effect.gen(function* () {
      const throttle = yield* AuthThrottle
      for (let i = 0; i < 250; i++) yield* throttle.recordFailure(`10.0.${i >> 8}.${i & 255}`)
      assert.strictEqual(yield* throttle.size, 100)
      yield* TestClock.adjust(Duration.minutes(2))
      yield* throttle.recordFailure("10.9.9.9")
      assert.isAtMost(yield* throttle.size, 100)
    }).pipe(Effect.provide(AuthThrottle.layerWith({ ...defaultAuthThrottleOptions, maxAddresses: 100 })))
  )
})

const request = (remote: string | undefined, forwarded?: string) =>
  HttpServerRequest.fromWeb(
    new Request("http://gateway.test/v1/models", {
      headers: forwarded === undefined ? {} : { "x-forwarded-for": forwarded }
    })
  ).modify({ remoteAddress: Option.fromNullishOr(remote) })

describe("clientAddress", () => {
  const trust = (text: string) => parseTrustProxy(text) as TrustProxy

  it("is the socket peer; x-forwarded-for is ignored unless a proxy is trusted", () => {
    assert.strictEqual(clientAddress(request("203.0.113.9", "1.1.1.1"), "none"), "203.0.113.9")
    assert.strictEqual(clientAddress(request("::ffff:203.0.113.9"), "none"), "203.0.113.9")
    assert.strictEqual(clientAddress(request(undefined), "none"), "unknown")
  })

  it("counts IPv6 clients per /64", () => {
    assert.strictEqual(
      clientAddress(request("2001:db8:1:2:aaaa::1"), "none"),
      clientAddress(request("2001:db8:1:2:bbbb::7"), "none")
    )
    assert.notStrictEqual(
      clientAddress(request("2001:db8:1:2::1"), "none"),
      clientAddress(request("2001:db8:1:3::1"), "none")
    )
  })

  it("behind a trusted proxy takes the rightmost address the proxies did not add", () => {
    // The client wrote 6.6.6.6 itself; the proxy appended the address it saw.
    assert.strictEqual(clientAddress(request("10.0.0.1", "6.6.6.6, 198.51.100.7"), trust("true")), "198.51.100.7")
    assert.strictEqual(
      clientAddress(request("10.0.0.1", "6.6.6.6, 198.51.100.7, 10.0.0.2"), trust("10.0.0.0/8")),
      "198.51.100.7"
    )
    // A peer outside the trusted networks cannot name anybody.
    assert.strictEqual(clientAddress(request("192.0.2.1", "198.51.100.7"), trust("10.0.0.0/8")), "192.0.2.1")
    // An unreadable chain falls back to the proxy's own address.
    assert.strictEqual(clientAddress(request("10.0.0.1", "garbage"), trust("true")), "10.0.0.1")
    assert.strictEqual(clientAddress(request("10.0.0.1"), trust("true")), "10.0.0.1")
  })

  it("parses TOLLGATE_TRUST_PROXY", () => {
    assert.strictEqual(parseTrustProxy(""), "none")
    assert.strictEqual(parseTrustProxy("false"), "none")
    assert.strictEqual(parseTrustProxy("TRUE"), "any")
    assert.lengthOf(parseTrustProxy("127.0.0.1, 10.0.0.0/8, ::1") as ReadonlyArray<unknown>, 3)
    assert.isUndefined(parseTrustProxy("10.0.0.0/8, not-an-address"))
  })
})
