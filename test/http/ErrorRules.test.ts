import { assert, describe, it } from "@effect/vitest"
import { InvalidChatRequest, UpstreamFailed } from "../../src/app/ChatErrors.ts"
import { KeyRejected } from "../../src/app/Keys.ts"
import { LedgerRejected } from "../../src/app/LedgerErrors.ts"
import { StoreRefused } from "../../src/app/StoreErrors.ts"
import { VideoNotReady } from "../../src/app/video/VideoTaskParts.ts"
import { toApiError } from "../../src/http/ErrorRules.ts"

describe("toApiError", () => {
  it("maps each typed failure to its status, code and param", () => {
    const invalid = toApiError(new InvalidChatRequest({ param: "messages.0.role", message: "unknown role" }))
    assert.strictEqual(invalid?.status, 400)
    assert.deepStrictEqual(invalid?.options, { param: "messages.0.role", code: "invalid_request" })
    assert.strictEqual(invalid?.message, "messages.0.role: unknown role")

    const missing = toApiError(new KeyRejected({ reason: "missing" }))
    assert.strictEqual(missing?.status, 401)
    assert.strictEqual(missing?.options.code, null)
    assert.strictEqual(toApiError(new KeyRejected({ reason: "revoked" }))?.message, "This API key has been revoked.")

    const broke = toApiError(new LedgerRejected({ reason: "InsufficientBalance", message: "balance 0.000000" }))
    assert.strictEqual(broke?.status, 402)
    assert.strictEqual(broke?.options.code, "insufficient_quota")
    assert.strictEqual(toApiError(new LedgerRejected({ reason: "InvalidAmount", message: "no" }))?.status, 400)

    assert.strictEqual(toApiError(new StoreRefused({ sqlState: "22021" }))?.options.code, "unstorable_value")
    assert.strictEqual(toApiError(new VideoNotReady({ id: "video_1", status: "queued" }))?.status, 409)
  })

  it("labels who refused: the gateway's own check is never an upstream rejection", () => {
    const ours = toApiError(
      new UpstreamFailed({ reason: "invalid_request", message: "no", origin: "gateway", param: "tools.4.type" })
    )
    assert.strictEqual(ours?.status, 400)
    assert.strictEqual(ours?.options.code, "invalid_request")
    assert.strictEqual(ours?.options.param, "tools.4.type")
    const theirs = toApiError(new UpstreamFailed({ reason: "invalid_request", message: "no", origin: "upstream" }))
    assert.strictEqual(theirs?.options.code, "upstream_rejected")
    const limited = toApiError(new UpstreamFailed({ reason: "rate_limited", message: "slow", retryAfterSeconds: 7 }))
    assert.strictEqual(limited?.status, 429)
    assert.deepStrictEqual(limited?.options.headers, { "retry-after": "7" })
  })

  it("knows nothing of other values: they are defects, answered 500 by the route", () => {
    for (const value of [
      undefined,
      null,
      "ModelNotFound",
      new Error("boom"),
      { _tag: "Unknown" },
      { _tag: "toString" },
      { _tag: "constructor" },
      { _tag: "__proto__" }
    ]) {
      assert.isUndefined(toApiError(value), String((value as { _tag?: string } | null)?._tag ?? value))
    }
  })
})
