/** Delivery signatures and retry timing (src/app/alerts/AlertSignature.ts). */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { createHmac } from "node:crypto"
import { retryDelayMs, signatureOf, verifySignature } from "../../../src/app/alerts/AlertSignature.ts"

describe("AlertSignature", () => {
  it("signs `<t>.<body>` with HMAC-SHA256, as the documented recipe computes it", () => {
    const body = '{"id":"evt_1","type":"balance.low"}'
    const expected = createHmac("sha256", "whsec_0123456789abcdef").update(`1764067200.${body}`).digest("hex")
    assert.strictEqual(signatureOf("whsec_0123456789abcdef", 1764067200, body), `t=1764067200,v1=${expected}`)
  })

  it("verifies its own signatures, and refuses another secret, another body, or an old timestamp", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 16, maxLength: 64 }),
        fc.string({ maxLength: 500 }),
        fc.integer({ min: 1_000_000_000, max: 4_000_000_000 }),
        (secret, body, t) => {
          const header = signatureOf(secret, t, body)
          assert.isTrue(verifySignature(secret, header, body, t + 299))
          assert.isFalse(verifySignature(`${secret}x`, header, body, t))
          assert.isFalse(verifySignature(secret, header, `${body}x`, t))
          assert.isFalse(verifySignature(secret, header, body, t + 301))
        }
      ),
      { numRuns: 200 }
    )
    assert.isFalse(verifySignature("s".repeat(16), "garbage", "{}", 0))
  })

  it("retries after 5 s, tripling, at most an hour apart, and gives up after the last attempt", () => {
    assert.deepStrictEqual(
      Array.from({ length: 10 }, (_, index) => retryDelayMs(index + 1, 10)),
      [5_000, 15_000, 45_000, 135_000, 405_000, 1_215_000, 3_600_000, 3_600_000, 3_600_000, null]
    )
  })
})
