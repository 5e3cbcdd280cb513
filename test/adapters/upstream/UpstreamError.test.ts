import { assert, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import {
  AnthropicPaths,
  ArkPaths,
  authHeaders,
  GeminiPaths,
  OpenAiPaths,
  upstreamUrl
} from "../../../src/adapters/upstream/UpstreamEndpoints.ts"
import {
  Aborted,
  HttpStatus,
  isRequestDefect,
  isRetryableStatus,
  parseRetryAfter,
  reasonFromCause,
  UpstreamError
} from "../../../src/adapters/upstream/UpstreamError.ts"

const timeouts = { headersMs: 1_000, idleMs: 2_000 }
const coded = (code: string, message = "boom") => Object.assign(new Error(message), { code })

describe("parseRetryAfter", () => {
  const now = Date.parse("2026-11-22T10:00:00Z")
  it("prefers retry-after-ms, then seconds, then an HTTP date", () => {
    assert.strictEqual(parseRetryAfter({ "retry-after-ms": "250", "retry-after": "9" }, now), 0.25)
    assert.strictEqual(parseRetryAfter({ "retry-after": "12" }, now), 12)
    assert.strictEqual(parseRetryAfter({ "retry-after": "1.5" }, now), 1.5)
    assert.strictEqual(parseRetryAfter({ "retry-after": "Sun, 22 Nov 2026 10:00:42 GMT" }, now), 42)
    assert.strictEqual(parseRetryAfter({ "retry-after": "Sun, 22 Nov 2026 09:00:00 GMT" }, now), 0)
    assert.strictEqual(parseRetryAfter({ "retry-after": "soon" }, now), undefined)
    assert.strictEqual(parseRetryAfter({ "retry-after-ms": "x", "retry-after": "3" }, now), 3)
    assert.strictEqual(parseRetryAfter({}, now), undefined)
  })
})

describe("isRetryableStatus", () => {
  it("retries 429 and 5xx unless x-should-retry or an exhausted quota says otherwise", () => {
    assert.isTrue(isRetryableStatus(429, {}, ""))
    assert.isTrue(isRetryableStatus(500, {}, ""))
    assert.isTrue(isRetryableStatus(529, {}, ""))
    assert.isFalse(isRetryableStatus(400, {}, ""))
    assert.isFalse(isRetryableStatus(404, {}, ""))
    assert.isFalse(isRetryableStatus(429, {}, '{"error":{"code":"insufficient_quota"}}'))
    assert.isFalse(isRetryableStatus(503, { "x-should-retry": "false" }, ""))
    assert.isTrue(isRetryableStatus(409, { "x-should-retry": "true" }, ""))
  })
})

describe("reasonFromCause", () => {
  it("maps undici and socket errors to reasons", () => {
    assert.deepInclude(reasonFromCause(coded("ECONNREFUSED"), timeouts), {
      _tag: "ConnectFailed",
      code: "ECONNREFUSED"
    })
    assert.deepInclude(reasonFromCause(coded("ENOTFOUND"), timeouts), { _tag: "ConnectFailed", code: "ENOTFOUND" })
    assert.deepInclude(reasonFromCause(coded("UND_ERR_CONNECT_TIMEOUT"), timeouts), { _tag: "ConnectFailed" })
    assert.deepInclude(reasonFromCause(coded("CERT_HAS_EXPIRED"), timeouts), { _tag: "ConnectFailed" })
    assert.deepInclude(reasonFromCause(coded("UND_ERR_HEADERS_TIMEOUT"), timeouts), {
      _tag: "Timeout",
      phase: "headers",
      timeoutMs: 1_000
    })
    assert.deepInclude(reasonFromCause(coded("UND_ERR_BODY_TIMEOUT"), timeouts), {
      _tag: "Timeout",
      phase: "body",
      timeoutMs: 2_000
    })
    assert.deepInclude(reasonFromCause(coded("UND_ERR_SOCKET", "other side closed"), timeouts), {
      _tag: "ConnectionLost",
      code: "UND_ERR_SOCKET",
      detail: "other side closed"
    })
    assert.strictEqual(reasonFromCause(coded("UND_ERR_ABORTED"), timeouts)._tag, "Aborted")
    assert.strictEqual(reasonFromCause(new DOMException("gone", "AbortError"), timeouts)._tag, "Aborted")
    assert.deepInclude(reasonFromCause("weird", timeouts), { _tag: "ConnectionLost", code: "UNKNOWN" })
    const refused = new AggregateError([coded("ECONNREFUSED", "connect ECONNREFUSED ::1:80")], "")
    assert.deepInclude(reasonFromCause(refused, timeouts), {
      _tag: "ConnectFailed",
      code: "ECONNREFUSED",
      detail: "connect ECONNREFUSED ::1:80"
    })
    const wrapped = new UpstreamError({ upstream: "u", reason: new Aborted() })
    assert.strictEqual(reasonFromCause(wrapped, timeouts), wrapped.reason)
  })

  it("treats a request undici refuses to build as a defect", () => {
    assert.isTrue(isRequestDefect(coded("UND_ERR_INVALID_ARG")))
    assert.isFalse(isRequestDefect(coded("ECONNREFUSED")))
  })
})

describe("UpstreamError", () => {
  it("names the upstream and delegates retryability to its reason", () => {
    const error = new UpstreamError({
      upstream: "claude",
      reason: new HttpStatus({ status: 529, body: "Overloaded", isRetryable: true, retryAfter: 2 })
    })
    assert.strictEqual(error.message, "upstream claude: HTTP 529: Overloaded")
    assert.isTrue(error.isRetryable)
    assert.isFalse(new UpstreamError({ upstream: "u", reason: new Aborted() }).isRetryable)
  })
})

describe("UpstreamEndpoints", () => {
  const apiKey = Redacted.make("k-1")
  it("puts the key where each protocol expects it", () => {
    assert.deepStrictEqual(authHeaders({ protocol: "openai", apiKey }), { authorization: "Bearer k-1" })
    assert.deepStrictEqual(authHeaders({ protocol: "openai-videos", apiKey }), { authorization: "Bearer k-1" })
    assert.deepStrictEqual(authHeaders({ protocol: "ark", apiKey }), { authorization: "Bearer k-1" })
    assert.deepStrictEqual(authHeaders({ protocol: "anthropic", apiKey }), {
      "anthropic-version": "2023-06-01",
      "x-api-key": "k-1"
    })
    assert.deepStrictEqual(authHeaders({ protocol: "gemini", apiKey }), { "x-goog-api-key": "k-1" })
  })

  it("builds URLs from base URLs the way each SDK does", () => {
    assert.strictEqual(
      upstreamUrl({ baseUrl: "https://api.openai.com/v1" }, OpenAiPaths.chatCompletions),
      "https://api.openai.com/v1/chat/completions"
    )
    assert.strictEqual(
      upstreamUrl({ baseUrl: "https://api.anthropic.com/" }, AnthropicPaths.messages),
      "https://api.anthropic.com/v1/messages"
    )
    assert.strictEqual(
      upstreamUrl(
        { baseUrl: "https://generativelanguage.googleapis.com" },
        GeminiPaths.generateContent("gemini-2.5-flash")
      ),
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert.strictEqual(GeminiPaths.streamGenerateContent("m/x"), "/v1beta/models/m%2Fx:streamGenerateContent?alt=sse")
    assert.strictEqual(
      upstreamUrl({ baseUrl: "https://ark.example/api/v3" }, ArkPaths.task("cgt-1")),
      "https://ark.example/api/v3/contents/generations/tasks/cgt-1"
    )
    assert.strictEqual(OpenAiPaths.videoContent("video_1"), "/videos/video_1/content?variant=video")
  })
})
