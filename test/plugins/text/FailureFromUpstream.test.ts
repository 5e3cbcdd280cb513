/**
 * An upstream's failure reaches the client in the gateway's words, the vendor's text only in `detail` (logs); a
 * refusal of the request itself keeps the vendor's message, which says what to fix.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { HttpStatus, UpstreamError } from "../../../src/adapters/upstream/UpstreamError.ts"
import { failureFromUpstream } from "../../../src/plugins/UpstreamFailure.ts"

const answered = (status: number, body: string) =>
  new UpstreamError({ upstream: "vendor", reason: new HttpStatus({ status, body, isRetryable: status >= 500 }) })

describe("failureFromUpstream", () => {
  it("never puts the vendor's text about its own failure (5xx, 429, a refused key) in the client's message", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 500, max: 599 }), fc.constantFrom(401, 403, 429)),
        fc.stringMatching(/^[a-z]{6,20} [a-z]{6,20}$/),
        fc.constantFrom(
          (text: string) => JSON.stringify({ error: { message: text } }),
          (text: string) => JSON.stringify({ error: text }),
          (text: string) => JSON.stringify({ message: text }),
          (text: string) => text
        ),
        (status, text, envelope) => {
          const failure = failureFromUpstream(answered(status, envelope(text)))
          assert.notInclude(failure.message, text)
          assert.include(failure.detail ?? "", text, "the vendor's body is kept for the logs")
          assert.strictEqual(failure.upstreamStatus, status)
        }
      )
    )
  })

  it("says what happened in the gateway's words", () => {
    const body = JSON.stringify({ error: { message: "internal error" } })
    assert.strictEqual(failureFromUpstream(answered(500, body)).message, "the upstream failed (HTTP 500)")
    const refusal = JSON.stringify({ error: { message: "budget_tokens too high" } })
    assert.strictEqual(
      failureFromUpstream(answered(400, refusal)).message,
      "the upstream rejected the request: budget_tokens too high"
    )
    assert.strictEqual(failureFromUpstream(answered(429, body)).message, "the upstream is rate limiting; retry later")
  })
})
