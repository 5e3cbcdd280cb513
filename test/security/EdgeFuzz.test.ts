/**
 * Every route, fuzzed at the edge (issue 15): values that storage or the vendor would refuse — NUL, both halves of a
 * lone surrogate, over-long text, huge, negative and fractional amounts, nesting past the limit, wrong types, flags
 * that are not booleans — in bodies, path parameters and query parameters, sent by one account while a second
 * account's chat traffic (streamed and not) runs alongside. Every fuzz answer must be a 4xx in the envelope of the
 * protocol called, and every one of the second account's requests must succeed: nothing the fuzz sends reaches the
 * ledger's group-commit batches, where one refused command would fail its neighbours.
 *
 * The routes are read from the source (`route(...)` and `HttpRouter.add(...)` calls under src/), so a route added
 * without an entry here fails the suite. Runs on PGlite, and on a real Postgres when `TEST_DATABASE_URL` is set.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import fc from "fast-check"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { MAX_JSON_DEPTH, MAX_PARAMETER_CHARS } from "../../src/http/InputLimits.ts"
import { type Admin, type Customer, closeAfterReplay, makeAdmin } from "../http/chat/ChatHarness.ts"
import type { Wire } from "../http/chat/Fixtures.ts"
import { createPostgresDatabase } from "../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

// ---------------------------------------------------------------------------------------------------------------------
// The routes, from the source

const SOURCE = join(import.meta.dirname, "../../src")

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

/** `METHOD path` of every route the server registers. */
const declaredRoutes = (): ReadonlyArray<string> => {
  const pattern = /(?:\broute|HttpRouter\.add)\(\s*"(GET|POST|PUT|PATCH|DELETE|\*)",\s*"([^"]+)"/g
  // A route registered for a list of methods (`route(method, "*", …)` in a map) is every method's: `*`.
  const perMethod = /\broute\(\s*method,\s*"([^"]+)"/g
  const files = [...sourceFiles(join(SOURCE, "http")), join(SOURCE, "AppLayer.ts")]
  return [
    ...new Set(
      files.flatMap((file) => {
        const source = readFileSync(file, "utf8")
        return [
          ...[...source.matchAll(pattern)].map((m) => `${m[1]} ${m[2]}`),
          ...[...source.matchAll(perMethod)].map((m) => `* ${m[1]}`)
        ]
      })
    )
  ]
}

// ---------------------------------------------------------------------------------------------------------------------
// Bad values

const clean = fc.string({ maxLength: 6 })
const nul = fc.tuple(clean, clean).map(([a, b]) => `${a}\u0000${b}`)
const highHalf = fc
  .tuple(clean, fc.integer({ min: 0xd800, max: 0xdbff }), clean)
  .map(([a, unit, b]) => `${a}${String.fromCharCode(unit)}${b}`)
const lowHalf = fc
  .tuple(clean, fc.integer({ min: 0xdc00, max: 0xdfff }), clean)
  .map(([a, unit, b]) => `${a}${String.fromCharCode(unit)}${b}`)
const overLong = (limit: number) => fc.integer({ min: limit + 1, max: limit + 400 }).map((n) => "x".repeat(n))

/** Text a stored field or a parameter must refuse. */
const badText = (limit: number) => fc.oneof(nul, highHalf, lowHalf, overLong(limit))
/** The same without lone surrogates: a multipart body is UTF-8, where they cannot be written (they become U+FFFD). */
const badFormText = (limit: number) => fc.oneof(nul, overLong(limit))
const notAString = fc.oneof(fc.integer(), fc.boolean(), fc.constant([1]), fc.constant({ a: 1 }))
const badAmount = fc.oneof(
  fc.constantFrom(
    "-1",
    "-0.000001",
    "1.0000001",
    "1e3",
    "9223372036854.775808",
    "99999999999999999999",
    "",
    " 1",
    "NaN",
    "0x10",
    "1,5",
    "Infinity"
  ),
  fc.constantFrom(1.5, -1, 1e300, 2 ** 64, 0),
  notAString
)
/** A count (a positive integer within a range): zero, negative, fractional, huge, or not a number. */
const badCount = fc.oneof(
  fc.integer({ min: -1_000, max: 0 }),
  fc.double({ min: 0.01, max: 100, noNaN: true }).filter((n) => !Number.isInteger(n)),
  fc.constantFrom(2 ** 53, 1e300, -(2 ** 60)),
  fc.constantFrom("8", "yes", "", "1e3"),
  fc.constant([8])
)
/** An image count (1 to 10, a JSON number or its multipart string): zero, negative, fractional, over 10, not one. */
const badImageCount = fc.oneof(
  fc.integer({ min: -100, max: 0 }),
  fc.constantFrom(1.5, 11, 1_000, 2 ** 53, "yes", "1e3", [2], { n: 2 })
)
/** Video seconds (4 to 15, a number or digits): out of range, fractional, or not digits. */
const badSeconds = fc.constantFrom("four", "4.5", "-1", "99", 4.5, 99, 0, -3, "1e1", [4], { s: 4 })
const badFlag = fc.constantFrom("yes", "no", "TRUE", 1, 0, [], {}, "1")
const badInstant = fc.constantFrom(
  "2020-01-01T00:00:00Z",
  "2099-02-30T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "tomorrow",
  "2099-01-01",
  "2099-01-01T25:00:00Z",
  "2099-13-01T00:00:00Z"
)
const badEnum = fc.oneof(badText(64), fc.constantFrom("nope", "XML", "1e3"), notAString)

/**
 * The JSON text of `{"a":[{"a":[…]}]}` between `MAX_JSON_DEPTH + 1` and 10,000 levels deep: text, because a value
 * that deep would overflow the test's own stack wherever it is copied or printed.
 */
const deepText = fc.integer({ min: MAX_JSON_DEPTH + 1, max: 10_000 }).map((levels) => {
  const pairs = Math.ceil(levels / 2)
  return `${'{"a":['.repeat(pairs)}1${"]}".repeat(pairs)}`
})
const DEEP = "__deep_value__"

// ---------------------------------------------------------------------------------------------------------------------
// Requests

type Envelope = "openai" | "anthropic" | "google"

/** Percent-encodes text as a client would, lone surrogates as the three bytes of their (invalid) UTF-8 form. */
const encode = (text: string): string => {
  let out = ""
  for (const char of text) {
    const unit = char.charCodeAt(0)
    out +=
      char.length === 1 && unit >= 0xd800 && unit <= 0xdfff
        ? [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
            .map((byte) => `%${byte.toString(16).toUpperCase()}`)
            .join("")
        : encodeURIComponent(char)
  }
  return out
}

interface Shot {
  readonly method: string
  readonly path: string
  readonly body?: string | FormData
  readonly headers?: Record<string, string>
  readonly label: string
}

type Fields = Record<string, unknown>

interface JsonField {
  /** Where the field sits in the body. */
  readonly path: ReadonlyArray<string | number>
  readonly bad: fc.Arbitrary<unknown>
}

interface RouteFuzz {
  readonly envelope: Envelope
  readonly as: "admin" | "key"
  /** The request path from its (percent-encoded) parameters. */
  readonly url: (params: Record<string, string>) => string
  /** Valid path parameter values, raw. */
  readonly params?: (ids: Ids) => Record<string, string>
  readonly query?: ReadonlyArray<string>
  readonly json?: { readonly base: (ids: Ids) => Fields; readonly fields: ReadonlyArray<JsonField> }
  readonly form?: {
    readonly base: () => Record<string, string>
    readonly fields: ReadonlyArray<{ readonly name: string; readonly bad: fc.Arbitrary<string> }>
    readonly file?: { readonly name: string; readonly type: string; readonly bytes: Uint8Array }
  }
  readonly headers?: ReadonlyArray<{ readonly name: string; readonly bad: fc.Arbitrary<string> }>
  /** Reads no input at all: only "never a 5xx" is asked of it. */
  readonly readsNothing?: true
}

interface Ids {
  readonly accountId: string
  readonly keyId: string
}

const setAt = (root: unknown, path: ReadonlyArray<string | number>, value: unknown): unknown => {
  if (path.length === 0) return value
  const [head, ...rest] = path
  const container: unknown =
    root !== null && typeof root === "object" ? root : typeof head === "number" ? [] : ({} as Fields)
  if (Array.isArray(container)) {
    const copy = [...container]
    copy[head as number] = setAt(copy[head as number], rest, value)
    return copy
  }
  const record = container as Fields
  return { ...record, [head]: setAt(record[head as string], rest, value) }
}

const text = (limit: number): fc.Arbitrary<unknown> => fc.oneof(badText(limit), notAString)
const hi = [{ role: "user", content: "hi" }]
const wav = new Uint8Array([0x52, 0x49, 0x46, 0x46, 0, 0, 0, 0, 0x57, 0x41, 0x56, 0x45])

/** Plain path parameters that exist but mean nothing (a real key's own id is the one `DELETE` would revoke). */
const someUuid = "6f1d2a4e-0b7c-4d39-9a55-1d2e3f4a5b6c"

const fuzzTable: Record<string, RouteFuzz> = {
  "POST /admin/accounts": {
    envelope: "openai",
    as: "admin",
    url: () => "/admin/accounts",
    json: { base: () => ({ name: "fuzzed" }), fields: [{ path: ["name"], bad: text(200) }] }
  },
  "GET /admin/accounts": {
    envelope: "openai",
    as: "admin",
    url: () => "/admin/accounts",
    query: ["search", "limit"]
  },
  "GET /admin/accounts/:id": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}`,
    params: (ids) => ({ id: ids.accountId }),
    query: ["asOf"]
  },
  "POST /admin/accounts/:id/deposits": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/deposits`,
    params: (ids) => ({ id: ids.accountId }),
    json: {
      base: () => ({ amount: "1", reference: `fuzz-${Math.random()}` }),
      fields: [
        { path: ["amount"], bad: badAmount },
        { path: ["reference"], bad: text(200) }
      ]
    }
  },
  "POST /admin/accounts/:id/keys": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/keys`,
    params: (ids) => ({ id: ids.accountId }),
    json: {
      base: () => ({ name: "fuzzed" }),
      fields: [
        { path: ["name"], bad: text(200) },
        { path: ["models", 0], bad: text(200) },
        { path: ["models"], bad: fc.oneof(notAString, fc.constant(Array.from({ length: 300 }, (_, i) => `m${i}`))) },
        { path: ["expiresAt"], bad: fc.oneof(badInstant, notAString) },
        { path: ["spendLimit"], bad: badAmount.filter((a) => a !== 0) },
        { path: ["rateLimits", "rpm"], bad: badCount }
      ]
    }
  },
  "GET /admin/accounts/:id/keys": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/keys`,
    params: (ids) => ({ id: ids.accountId })
  },
  "DELETE /admin/keys/:keyId": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/keys/${p.keyId}`,
    params: () => ({ keyId: someUuid })
  },
  "GET /admin/accounts/:id/ledger": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/ledger`,
    params: (ids) => ({ id: ids.accountId }),
    query: ["after", "limit"]
  },
  "GET /admin/accounts/:id/statement": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/statement`,
    params: (ids) => ({ id: ids.accountId }),
    query: ["from", "to", "format"]
  },
  "GET /admin/accounts/:id/videos": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/videos`,
    params: (ids) => ({ id: ids.accountId }),
    query: ["limit", "after", "order"]
  },
  "GET /admin/accounts/:id/videos/:videoId/content": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/videos/${p.videoId}/content`,
    params: (ids) => ({ id: ids.accountId, videoId: "video_x" }),
    query: ["variant"]
  },
  "GET /admin/batches": {
    envelope: "openai",
    as: "admin",
    url: () => "/admin/batches",
    query: ["accountId", "status", "limit", "after"]
  },
  "GET /admin/batches/:id": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/batches/${p.id}`,
    params: () => ({ id: "batch_x" })
  },
  "POST /admin/batches/:id/cancel": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/batches/${p.id}/cancel`,
    params: () => ({ id: "batch_x" })
  },
  "GET /admin/usage": {
    envelope: "openai",
    as: "admin",
    url: () => "/admin/usage",
    query: ["accountId", "keyId", "model", "from", "to", "groupBy"]
  },
  "GET /admin/usage/requests": {
    envelope: "openai",
    as: "admin",
    url: () => "/admin/usage/requests",
    query: ["accountId", "keyId", "requestId", "before", "cursor", "limit"]
  },
  "GET /admin/models": { envelope: "openai", as: "admin", url: () => "/admin/models" },
  "GET /admin/upstreams": { envelope: "openai", as: "admin", url: () => "/admin/upstreams" },
  // An upstream that does not exist: disabling a real one would take the fuzzed chat routes' models down.
  "POST /admin/upstreams/:name/disable": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/upstreams/${p.name}/disable`,
    params: () => ({ name: "no-such-upstream" })
  },
  "POST /admin/upstreams/:name/enable": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/upstreams/${p.name}/enable`,
    params: () => ({ name: "no-such-upstream" })
  },
  "PATCH /admin/upstreams/:name": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/upstreams/${p.name}`,
    params: () => ({ name: "no-such-upstream" }),
    json: {
      base: () => ({ enabled: true }),
      fields: [{ path: ["enabled"], bad: notAString.filter((v) => typeof v !== "boolean") }]
    }
  },
  "POST /admin/accounts/:id/alerts": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/alerts`,
    params: (ids) => ({ id: ids.accountId }),
    json: {
      base: () => ({ url: "https://hooks.example/x", events: ["video.failed"], secret: "whsec_fuzz_0123456789" }),
      fields: [
        { path: ["url"], bad: text(2048) },
        { path: ["events", 0], bad: text(50) },
        { path: ["events"], bad: fc.oneof(notAString, fc.constant([])) },
        { path: ["secret"], bad: text(256) },
        { path: ["balanceBelow"], bad: badAmount.filter((a) => a !== 0) }
      ]
    }
  },
  "GET /admin/accounts/:id/alerts": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/accounts/${p.id}/alerts`,
    params: (ids) => ({ id: ids.accountId })
  },
  "DELETE /admin/alerts/:endpointId": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/alerts/${p.endpointId}`,
    params: () => ({ endpointId: someUuid })
  },
  "GET /admin/alerts/deliveries": {
    envelope: "openai",
    as: "admin",
    url: () => "/admin/alerts/deliveries",
    query: ["accountId", "status", "limit"]
  },
  "POST /admin/alerts/deliveries/:id/resend": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/alerts/deliveries/${p.id}/resend`,
    params: () => ({ id: someUuid })
  },
  "POST /admin/replay": { envelope: "openai", as: "admin", url: () => "/admin/replay", query: ["mode"] },
  "POST /admin/audit/verify": { envelope: "openai", as: "admin", url: () => "/admin/audit/verify" },
  "POST /admin/audit/checkpoint": { envelope: "openai", as: "admin", url: () => "/admin/audit/checkpoint" },
  "* /admin/*": {
    envelope: "openai",
    as: "admin",
    url: (p) => `/admin/${p.rest}`,
    params: () => ({ rest: "nothing-here" })
  },
  "GET /v1/usage": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/usage",
    query: ["model", "from", "to", "groupBy", "accountId", "keyId"]
  },
  "GET /v1/usage/requests": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/usage/requests",
    query: ["requestId", "keyId", "before", "cursor", "limit"]
  },
  "GET /v1/balance": { envelope: "openai", as: "key", url: () => "/v1/balance" },
  "POST /v1/chat/completions": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/chat/completions",
    json: {
      base: () => ({ model: "sim-openai", messages: hi }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["stream"], bad: badFlag },
        { path: ["stream_options", "include_usage"], bad: badFlag },
        { path: ["parallel_tool_calls"], bad: badFlag },
        { path: ["max_tokens"], bad: badCount },
        { path: ["n"], bad: badCount },
        { path: ["messages"], bad: fc.oneof(fc.integer(), fc.constant({}), fc.constant("hi"), fc.constant([])) },
        { path: ["tools", 0], bad: fc.constant({ type: "function", function: { name: "f", strict: "yes" } }) }
      ]
    }
  },
  "POST /v1/responses": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/responses",
    json: {
      base: () => ({ model: "sim-anthropic", input: "hi" }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["input"], bad: fc.oneof(nul, highHalf, lowHalf, fc.integer(), fc.constant({}), fc.constant([])) },
        { path: ["instructions"], bad: fc.oneof(nul, highHalf, lowHalf, fc.integer()) },
        { path: ["stream"], bad: badFlag },
        { path: ["store"], bad: badFlag },
        { path: ["background"], bad: badFlag },
        { path: ["max_output_tokens"], bad: badCount },
        { path: ["previous_response_id"], bad: fc.oneof(nul, lowHalf, fc.integer(), fc.constant("resp_missing")) },
        { path: ["metadata"], bad: fc.oneof(fc.integer(), fc.constant({ k: 1 }), fc.constant([])) },
        { path: ["input", 0], bad: fc.constant({ type: "function_call_output", call_id: "c", output: "x" }) },
        { path: ["tools", 0], bad: fc.constant({ type: "function", name: "f", strict: "yes" }) },
        { path: ["temperature"], bad: fc.oneof(fc.constant("zzz"), fc.constant(1e308), fc.constant(-1)) },
        { path: ["top_p"], bad: fc.oneof(fc.constant(1e308), fc.constant("x")) },
        { path: ["top_logprobs"], bad: fc.oneof(fc.constant(21), fc.constant(1.5)) },
        { path: ["text"], bad: fc.oneof(fc.constant("str"), fc.constant({ format: { type: "yaml" } })) },
        { path: ["tools"], bad: fc.oneof(fc.constant("str"), fc.constant([{ name: "f" }])) },
        { path: ["reasoning"], bad: fc.oneof(fc.constant("str"), fc.constant({ effort: "extreme" })) },
        { path: ["truncation"], bad: fc.constant("sometimes") },
        { path: ["service_tier"], bad: fc.constant("gold") },
        { path: ["conversation"], bad: fc.oneof(fc.integer(), overLong(300), fc.constant("conv_missing")) },
        { path: ["input", 0, "id"], bad: overLong(3_000) },
        { path: ["input", 0, "status"], bad: fc.constant("done") }
      ]
    }
  },
  "POST /v1/conversations": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/conversations",
    json: {
      base: () => ({ items: [{ type: "message", role: "user", content: "hi" }] }),
      fields: [
        { path: ["items"], bad: fc.oneof(fc.integer(), fc.constant("x"), fc.constant([1])) },
        { path: ["items", 0, "id"], bad: fc.oneof(overLong(3_000), fc.integer()) },
        { path: ["items", 0, "content"], bad: fc.oneof(nul, highHalf, lowHalf, fc.integer()) },
        { path: ["metadata"], bad: fc.oneof(fc.integer(), fc.constant({ k: 1 }), fc.constant([])) }
      ]
    }
  },
  "GET /v1/conversations/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/conversations/${p.id}`,
    params: () => ({ id: "conv_x" })
  },
  "POST /v1/conversations/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/conversations/${p.id}`,
    params: () => ({ id: "conv_x" }),
    json: {
      base: () => ({ metadata: { a: "b" } }),
      fields: [{ path: ["metadata"], bad: fc.oneof(fc.integer(), fc.constant({ k: 1 }), nul) }]
    }
  },
  "DELETE /v1/conversations/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/conversations/${p.id}`,
    params: () => ({ id: "conv_x" })
  },
  "POST /v1/conversations/:id/items": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/conversations/${p.id}/items`,
    params: () => ({ id: "conv_x" }),
    json: {
      base: () => ({ items: [{ type: "message", role: "user", content: "hi" }] }),
      fields: [{ path: ["items"], bad: fc.oneof(fc.integer(), fc.constant("x"), fc.constant([1])) }]
    }
  },
  "GET /v1/conversations/:id/items": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/conversations/${p.id}/items`,
    params: () => ({ id: "conv_x" }),
    query: ["limit", "order", "after"]
  },
  "GET /v1/conversations/:id/items/:item_id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/conversations/${p.id}/items/${p.item_id}`,
    params: () => ({ id: "conv_x", item_id: "msg_x" })
  },
  "DELETE /v1/conversations/:id/items/:item_id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/conversations/${p.id}/items/${p.item_id}`,
    params: () => ({ id: "conv_x", item_id: "msg_x" })
  },
  "POST /v1/responses/input_tokens": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/responses/input_tokens",
    json: {
      base: () => ({ model: "sim-anthropic", input: "hi" }),
      fields: [
        { path: ["input"], bad: fc.oneof(nul, highHalf, fc.integer(), fc.constant({})) },
        { path: ["previous_response_id"], bad: fc.oneof(fc.integer(), fc.constant("resp_missing")) }
      ]
    }
  },
  "GET /v1/responses/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/responses/${p.id}`,
    params: () => ({ id: "resp_x" }),
    query: ["include", "stream", "starting_after"]
  },
  "DELETE /v1/responses/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/responses/${p.id}`,
    params: () => ({ id: "resp_x" })
  },
  "POST /v1/responses/:id/cancel": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/responses/${p.id}/cancel`,
    params: () => ({ id: "resp_x" })
  },
  "GET /v1/responses/:id/input_items": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/responses/${p.id}/input_items`,
    params: () => ({ id: "resp_x" }),
    query: ["limit", "order", "after", "before"]
  },
  "POST /v1/messages": {
    envelope: "anthropic",
    as: "key",
    url: () => "/v1/messages",
    json: {
      base: () => ({ model: "sim-anthropic", max_tokens: 8, messages: hi }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["stream"], bad: fc.oneof(badFlag, fc.constant(null)) },
        { path: ["max_tokens"], bad: badCount },
        { path: ["messages"], bad: fc.oneof(fc.integer(), fc.constant({}), fc.constant("hi"), fc.constant([])) }
      ]
    }
  },
  "POST /v1/messages/count_tokens": {
    envelope: "anthropic",
    as: "key",
    url: () => "/v1/messages/count_tokens",
    json: {
      base: () => ({ model: "sim-anthropic", messages: hi }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["messages"], bad: fc.oneof(fc.integer(), fc.constant({}), fc.constant("hi")) },
        { path: ["stream"], bad: badFlag }
      ]
    }
  },
  "POST /v1beta/models/*": {
    envelope: "google",
    as: "key",
    url: (p) => `/v1beta/models/${p.model}:generateContent`,
    params: () => ({ model: "sim-gemini" }),
    json: {
      base: () => ({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
      fields: [
        { path: ["contents"], bad: fc.oneof(fc.integer(), fc.constant({}), fc.constant("hi")) },
        { path: ["generationConfig", "maxOutputTokens"], bad: badCount },
        { path: ["generationConfig"], bad: fc.oneof(fc.integer(), fc.constant("x"), fc.constant([1])) }
      ]
    }
  },
  "POST /v1/images/generations": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/images/generations",
    json: {
      base: () => ({ model: "imggen-2", prompt: "a cat" }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["prompt"], bad: fc.oneof(overLong(32_000), notAString, fc.constant("")) },
        { path: ["n"], bad: badImageCount },
        { path: ["stream"], bad: badFlag },
        { path: ["size"], bad: badEnum },
        { path: ["quality"], bad: badEnum }
      ]
    }
  },
  "POST /v1/images/edits": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/images/edits",
    json: {
      // An inline image: nothing is fetched for a request the fuzz expects refused anyway.
      base: () => ({
        model: "imggen-2",
        prompt: "a cat",
        images: [{ image_url: "data:image/png;base64,iVBORw0KGgo=" }]
      }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["images"], bad: fc.oneof(fc.constant([]), fc.constant([1]), fc.constant([{ file_id: "f" }])) },
        { path: ["n"], bad: badImageCount },
        { path: ["stream"], bad: badFlag }
      ]
    }
  },
  "POST /v1/embeddings": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/embeddings",
    json: {
      base: () => ({ model: "sim-embedding", input: "hi" }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        {
          path: ["input"],
          bad: fc.oneof(fc.integer(), fc.constant({}), fc.constant([]), fc.constant([[]]), fc.constant(""))
        },
        { path: ["dimensions"], bad: badCount },
        { path: ["encoding_format"], bad: badEnum }
      ]
    }
  },
  "POST /v1/audio/speech": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/audio/speech",
    json: {
      base: () => ({ model: "sim-tts", input: "hi", voice: "alloy" }),
      fields: [
        { path: ["model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["input"], bad: fc.oneof(overLong(4_096), notAString, fc.constant("")) },
        { path: ["voice"], bad: fc.oneof(fc.integer(), fc.constant([]), fc.constant("")) },
        { path: ["speed"], bad: fc.oneof(fc.constantFrom(0, 5, -1, "fast"), fc.constant([1])) },
        { path: ["response_format"], bad: badEnum }
      ]
    }
  },
  "POST /v1/audio/transcriptions": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/audio/transcriptions",
    form: {
      base: () => ({ model: "sim-transcribe" }),
      file: { name: "a.wav", type: "audio/wav", bytes: wav },
      fields: [
        { name: "stream", bad: fc.constantFrom("yes", "1", "TRUE", "no") },
        { name: "temperature", bad: fc.constantFrom("2", "-1", "hot", "1e400") },
        { name: "response_format", bad: fc.oneof(badFormText(64), fc.constantFrom("xml", "JSON")) },
        { name: "timestamp_granularities[]", bad: fc.constantFrom("char", "WORD", "") }
      ]
    }
  },
  "POST /v1/videos": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/videos",
    json: {
      base: () => ({
        model: "video-model-2.0-fast",
        prompt: "a cat",
        metadata: { images: ["https://example.com/cat.png"], ratio: "16:9" }
      }),
      fields: [
        { path: ["model"], bad: text(300) },
        { path: ["prompt"], bad: text(32_000) },
        { path: ["seconds"], bad: badSeconds },
        { path: ["metadata", "images", 0], bad: text(2_048) },
        { path: ["metadata", "images"], bad: fc.oneof(fc.integer(), fc.constant("https://example.com/a.png")) },
        { path: ["metadata", "ratio"], bad: badEnum },
        { path: ["metadata", "resolution"], bad: badEnum },
        { path: ["metadata", "note"], bad: fc.oneof(nul, highHalf, lowHalf) },
        {
          path: ["metadata"],
          bad: fc
            .oneof(nul, highHalf, lowHalf)
            .map((bad) => JSON.stringify({ images: [`https://example.com/${bad}.png`] }))
        },
        { path: ["metadata"], bad: fc.oneof(fc.integer(), fc.constant([1]), fc.constant("not json")) }
      ]
    },
    headers: [{ name: "idempotency-key", bad: fc.integer({ min: 256, max: 2_000 }).map((n) => "k".repeat(n)) }]
  },
  "GET /v1/videos": { envelope: "openai", as: "key", url: () => "/v1/videos", query: ["limit", "after", "order"] },
  "GET /v1/videos/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/videos/${p.id}`,
    params: () => ({ id: "video_x" })
  },
  "GET /v1/videos/:id/content": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/videos/${p.id}/content`,
    params: () => ({ id: "video_x" }),
    query: ["variant"]
  },
  "POST /v1/files": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/files",
    form: {
      base: () => ({ purpose: "batch" }),
      file: {
        name: "in.jsonl",
        type: "application/jsonl",
        bytes: new TextEncoder().encode(
          `${JSON.stringify({ custom_id: "a", method: "POST", url: "/v1/chat/completions", body: { model: "sim-openai", messages: [] } })}\n`
        )
      },
      fields: [{ name: "purpose", bad: fc.oneof(badFormText(64), fc.constantFrom("fine-tune", "assistants", "BATCH")) }]
    }
  },
  "GET /v1/files": { envelope: "openai", as: "key", url: () => "/v1/files", query: ["limit", "after", "purpose"] },
  "GET /v1/files/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/files/${p.id}`,
    params: () => ({ id: "file-x" })
  },
  "GET /v1/files/:id/content": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/files/${p.id}/content`,
    params: () => ({ id: "file-x" })
  },
  "DELETE /v1/files/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/files/${p.id}`,
    params: () => ({ id: "file-x" })
  },
  "POST /v1/batches": {
    envelope: "openai",
    as: "key",
    url: () => "/v1/batches",
    json: {
      base: () => ({ input_file_id: "file-x", endpoint: "/v1/chat/completions", completion_window: "24h" }),
      fields: [
        { path: ["input_file_id"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["endpoint"], bad: badEnum },
        { path: ["completion_window"], bad: badEnum },
        { path: ["metadata"], bad: fc.oneof(fc.integer(), fc.constant([1]), fc.constant({ k: 1 })) },
        { path: ["metadata", "note"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(600)) }
      ]
    }
  },
  "GET /v1/batches": { envelope: "openai", as: "key", url: () => "/v1/batches", query: ["limit", "after"] },
  "GET /v1/batches/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/batches/${p.id}`,
    params: () => ({ id: "batch_x" })
  },
  "POST /v1/batches/:id/cancel": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/batches/${p.id}/cancel`,
    params: () => ({ id: "batch_x" })
  },
  "POST /v1/messages/batches": {
    envelope: "anthropic",
    as: "key",
    url: () => "/v1/messages/batches",
    json: {
      base: () => ({
        requests: [{ custom_id: "a", params: { model: "sim-anthropic", max_tokens: 8, messages: hi } }]
      }),
      fields: [
        { path: ["requests"], bad: fc.oneof(fc.integer(), fc.constant({}), fc.constant("hi"), fc.constant([])) },
        { path: ["requests", 0], bad: fc.oneof(fc.integer(), fc.constant("hi"), fc.constant([1])) },
        { path: ["requests", 0, "custom_id"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["requests", 0, "params"], bad: fc.oneof(fc.integer(), fc.constant("hi"), fc.constant([])) },
        { path: ["requests", 0, "params", "model"], bad: fc.oneof(nul, highHalf, lowHalf, overLong(300), notAString) },
        { path: ["requests", 0, "params", "max_tokens"], bad: badCount },
        { path: ["requests", 0, "params", "messages"], bad: fc.oneof(fc.integer(), fc.constant({}), fc.constant([])) }
      ]
    }
  },
  "GET /v1/messages/batches": {
    envelope: "anthropic",
    as: "key",
    url: () => "/v1/messages/batches",
    query: ["limit", "before_id", "after_id"]
  },
  "GET /v1/messages/batches/:id": {
    envelope: "anthropic",
    as: "key",
    url: (p) => `/v1/messages/batches/${p.id}`,
    params: () => ({ id: "msgbatch_x" })
  },
  "GET /v1/messages/batches/:id/results": {
    envelope: "anthropic",
    as: "key",
    url: (p) => `/v1/messages/batches/${p.id}/results`,
    params: () => ({ id: "msgbatch_x" })
  },
  "POST /v1/messages/batches/:id/cancel": {
    envelope: "anthropic",
    as: "key",
    url: (p) => `/v1/messages/batches/${p.id}/cancel`,
    params: () => ({ id: "msgbatch_x" })
  },
  "DELETE /v1/messages/batches/:id": {
    envelope: "anthropic",
    as: "key",
    url: (p) => `/v1/messages/batches/${p.id}`,
    params: () => ({ id: "msgbatch_x" })
  },
  "GET /": { envelope: "openai", as: "key", url: () => "/" },
  "GET /healthz": { envelope: "openai", as: "key", url: () => "/healthz" },
  "GET /readyz": { envelope: "openai", as: "key", url: () => "/readyz" },
  "GET /v1/models": { envelope: "openai", as: "key", url: () => "/v1/models" },
  "GET /v1/models/:id": {
    envelope: "openai",
    as: "key",
    url: (p) => `/v1/models/${p.id}`,
    params: () => ({ id: "sim-openai" })
  },
  "GET /v1beta/models": { envelope: "google", as: "key", url: () => "/v1beta/models" },
  "GET /console/*": {
    envelope: "openai",
    as: "key",
    url: (p) => `/console/${p.rest}`,
    params: () => ({ rest: "index.html" })
  },
  "* *": { envelope: "openai", as: "key", url: (p) => `/nothing/${p.rest}`, params: () => ({ rest: "here" }) },
  // Prometheus' scrape reads no parameter and no body, and is not wrapped by `respond`: it only must not fail.
  "GET /metrics": { envelope: "openai", as: "key", url: () => "/metrics", readsNothing: true }
}

/** Every kind of bad request the entry allows, as one arbitrary of shots. */
const shotsFor = (key: string, fuzz: RouteFuzz, ids: Ids): fc.Arbitrary<Shot> => {
  const method = key.split(" ")[0] === "*" ? "GET" : key.split(" ")[0]
  const valid = fuzz.params?.(ids) ?? {}
  const encodedValid = Object.fromEntries(Object.entries(valid).map(([name, value]) => [name, encode(value)]))
  const path = fuzz.url(encodedValid)
  const jsonBody = fuzz.json === undefined ? undefined : JSON.stringify(fuzz.json.base(ids))
  const plain = (label: string, over: Partial<Shot>): Shot => ({
    method,
    path,
    label,
    ...(jsonBody === undefined ? {} : { body: jsonBody }),
    ...over
  })
  const cases: Array<fc.Arbitrary<Shot>> = []
  for (const name of Object.keys(valid)) {
    // Path parameters: nothing longer than the router's 100-character limit reaches a handler; the check's own
    // limit applies to wildcards.
    cases.push(
      fc.oneof(nul, highHalf, lowHalf, overLong(MAX_PARAMETER_CHARS)).map((bad) => {
        const params = { ...encodedValid, [name]: encode(bad) }
        return plain(`path ${name}=${JSON.stringify(bad.slice(0, 40))}`, { path: fuzz.url(params) })
      })
    )
  }
  const names = [...(fuzz.query ?? []), "extra"]
  cases.push(
    fc.tuple(fc.constantFrom(...names), badText(MAX_PARAMETER_CHARS), fc.boolean()).map(([name, bad, asName]) => {
      const pair = asName ? `${encode(bad)}=1` : `${encode(name)}=${encode(bad)}`
      return plain(`query ${asName ? "name" : name}=${JSON.stringify(bad.slice(0, 40))}`, { path: `${path}?${pair}` })
    })
  )
  const json = fuzz.json
  if (json !== undefined) {
    const base = json.base(ids)
    const bodyWith = (label: string, body: unknown) => plain(label, { body: JSON.stringify(body) })
    for (const field of json.fields) {
      cases.push(
        field.bad.map((bad) =>
          bodyWith(`${field.path.join(".")}=${JSON.stringify(bad)?.slice(0, 60)}`, setAt(base, field.path, bad))
        )
      )
    }
    // Deep values go into a new key of the body or of any object the body has (never into an array, where a string
    // key would not be sent).
    const valueAt = (path: ReadonlyArray<string | number>) =>
      path.reduce<unknown>((value, segment) => (value as Record<string, unknown> | undefined)?.[segment], base)
    const objectPaths: Array<ReadonlyArray<string | number>> = [
      ["x"],
      ...json.fields
        .map((f) => f.path.slice(0, -1))
        .filter((parent) => {
          const value = valueAt(parent)
          return value === undefined || (typeof value === "object" && value !== null && !Array.isArray(value))
        })
        .map((parent) => [...parent, "deep"])
    ]
    cases.push(
      fc.tuple(fc.constantFrom(...objectPaths), deepText).map(([at, deep]) =>
        plain(`${at.join(".")} nested ${deep.length / 6} deep`, {
          body: JSON.stringify(setAt(base, at, DEEP)).replace(`"${DEEP}"`, deep)
        })
      )
    )
    cases.push(
      fc
        .oneof(fc.constant([]), fc.constant("text"), fc.integer(), fc.constant(null), fc.constant([base]))
        .map((whole) => bodyWith(`the body as ${JSON.stringify(whole).slice(0, 40)}`, whole))
    )
    cases.push(
      fc
        .constantFrom('{"a":', "{'a':1}", "\u0000", "[1,]")
        .map((broken) => plain(`broken JSON ${broken}`, { body: broken }))
    )
  }
  const form = fuzz.form
  if (form !== undefined) {
    const build = (fields: Record<string, string>, withFile: boolean) => {
      const data = new FormData()
      for (const [name, value] of Object.entries(fields)) data.append(name, value)
      if (withFile && form.file !== undefined) {
        data.append(
          "file",
          new Blob([form.file.bytes as Uint8Array<ArrayBuffer>], { type: form.file.type }),
          form.file.name
        )
      }
      return data
    }
    for (const field of form.fields) {
      cases.push(
        field.bad.map((bad) => ({
          method,
          path,
          label: `form ${field.name}=${JSON.stringify(bad.slice(0, 40))}`,
          body: build({ ...form.base(), [field.name]: bad }, true)
        }))
      )
    }
    cases.push(fc.constant({ method, path, label: "form without its file", body: build(form.base(), false) }))
  }
  for (const header of fuzz.headers ?? []) {
    cases.push(
      header.bad.map((bad) => plain(`header ${header.name} (${bad.length})`, { headers: { [header.name]: bad } }))
    )
  }
  return fc.oneof(...cases)
}

// ---------------------------------------------------------------------------------------------------------------------
// The suite, on each store

const targets: ReadonlyArray<{ readonly name: string; readonly url?: string }> = [
  { name: "pglite" },
  ...(process.env.TEST_DATABASE_URL ? [{ name: "postgres", url: process.env.TEST_DATABASE_URL }] : [])
]

describe("every route is in the fuzz table", () => {
  it("the routes the server registers and the fuzzed ones are the same", () => {
    const declared = declaredRoutes()
    assert.isAbove(declared.length, 30)
    assert.sameMembers(
      declared as Array<string>,
      Object.keys(fuzzTable),
      "a route without a fuzz entry, or a stale entry"
    )
  })
})

describe.each(targets)("edge fuzz on $name", ({ url }) => {
  let gateway: TestGateway
  let admin: Admin
  let fuzzer: Customer
  let bystander: Customer
  let database: { drop(): Promise<void> } | undefined

  beforeAll(async () => {
    const db = url === undefined ? undefined : await createPostgresDatabase(url)
    database = db
    gateway = await startTestGateway({
      ...(db === undefined ? {} : { database: { kind: "postgres", url: Redacted.make(db.url), maxConnections: 8 } }),
      // Video workers off: a task the fuzz might submit must not start background work the test does not wait for.
      video: { enabled: false },
      // Both accounts call from 127.0.0.1: the fuzz is not about authentication, so its throttle stays out of the way.
      authThrottle: { maxFailures: 100_000 }
    })
    admin = makeAdmin(gateway)
    fuzzer = await admin.customer({ deposit: "1000" })
    bystander = await admin.customer({ deposit: "1000" })
  }, 60_000)

  afterAll(async () => {
    await closeAfterReplay(gateway === undefined ? undefined : { admin, close: () => gateway.close() })
    await database?.drop()
  }, 60_000)

  /** The second account's traffic: chat completions and messages, streamed and not, until `stop` says so. */
  const bystanderTraffic = (stop: () => boolean) => {
    const outcomes: Array<{ readonly label: string; readonly ok: boolean; readonly detail: string }> = []
    const one = async (n: number) => {
      const streamed = n % 2 === 1
      const anthropic = n % 4 >= 2
      const response = await fetch(`${gateway.url}${anthropic ? "/v1/messages" : "/v1/chat/completions"}`, {
        method: "POST",
        headers: anthropic
          ? { "x-api-key": bystander.key, "anthropic-version": "2023-06-01", "content-type": "application/json" }
          : { authorization: `Bearer ${bystander.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: anthropic ? "sim-anthropic" : "sim-openai",
          max_tokens: 16,
          stream: streamed,
          messages: [{ role: "user", content: `request ${n}` }]
        })
      })
      const body = await response.text()
      const complete = !streamed
        ? body.startsWith("{") && JSON.parse(body).error === undefined
        : anthropic
          ? body.includes("event: message_stop")
          : body.includes("data: [DONE]")
      outcomes.push({
        label: `${anthropic ? "messages" : "chat"}${streamed ? " streamed" : ""} #${n}`,
        ok: response.status === 200 && complete,
        detail: `${response.status} ${body.slice(-200)}`
      })
    }
    const worker = async (offset: number) => {
      for (let n = offset; !stop(); n += 2) await one(n)
    }
    return { outcomes, done: Promise.all([worker(0), worker(1)]) }
  }

  const send = async (fuzz: Pick<RouteFuzz, "as" | "envelope">, shot: Shot) => {
    const credentials: Record<string, string> =
      fuzz.as === "admin"
        ? { authorization: `Bearer ${gateway.adminToken}` }
        : fuzz.envelope === "google"
          ? { "x-goog-api-key": fuzzer.key }
          : fuzz.envelope === "anthropic"
            ? { "x-api-key": fuzzer.key, "anthropic-version": "2023-06-01" }
            : { authorization: `Bearer ${fuzzer.key}` }
    const response = await fetch(`${gateway.url}${shot.path}`, {
      method: shot.method,
      headers: {
        ...credentials,
        ...(typeof shot.body === "string" ? { "content-type": "application/json" } : {}),
        ...shot.headers
      },
      ...(shot.body === undefined ? {} : { body: shot.body })
    })
    return { status: response.status, text: await response.text() }
  }

  /** A 4xx in the envelope of the protocol called. */
  const assertRefused = (envelope: Envelope, answer: { status: number; text: string }, label: string) => {
    assert.isAtLeast(answer.status, 400, label)
    assert.isBelow(answer.status, 500, label)
    const body: Wire = JSON.parse(answer.text)
    if (envelope === "anthropic") {
      assert.strictEqual(body.type, "error", label)
      assert.isString(body.error.type, label)
      assert.isString(body.error.message, label)
    } else if (envelope === "google") {
      assert.strictEqual(body.error.code, answer.status, label)
      assert.isString(body.error.status, label)
      assert.isString(body.error.message, label)
    } else {
      assert.isString(body.error.message, label)
      assert.isString(body.error.type, label)
    }
  }

  const assertBystanderServed = (outcomes: ReadonlyArray<{ label: string; ok: boolean; detail: string }>) => {
    assert.deepStrictEqual(
      outcomes.filter((o) => !o.ok).map((o) => `${o.label}: ${o.detail}`),
      [],
      "every request of the second account succeeds"
    )
    assert.isAbove(outcomes.length, 10, "the second account's traffic ran alongside")
  }

  it("answers every fuzzed request to every route with a 4xx in its protocol's envelope, while the other account's chats all succeed", async () => {
    let fuzzing = true
    const traffic = bystanderTraffic(() => !fuzzing)
    const failures: Array<string> = []
    let sent = 0
    try {
      const ids: Ids = { accountId: fuzzer.accountId, keyId: fuzzer.keyId }
      for (const [key, fuzz] of Object.entries(fuzzTable)) {
        await fc
          .assert(
            fc.asyncProperty(shotsFor(key, fuzz, ids), async (shot) => {
              sent += 1
              const answer = await send(fuzz, shot)
              const label = `${key}: ${shot.label} → ${answer.status} ${answer.text.slice(0, 200)}`
              if (fuzz.readsNothing) assert.isBelow(answer.status, 500, label)
              else assertRefused(fuzz.envelope, answer, label)
            }),
            { numRuns: 25, seed: 15 }
          )
          .catch((error: unknown) => {
            failures.push(String((error as Error).message).slice(0, 1_500))
          })
      }
    } finally {
      fuzzing = false
      await traffic.done
    }
    assert.deepStrictEqual(failures, [])
    assert.isAbove(sent, 800)
    assertBystanderServed(traffic.outcomes)
  }, 180_000)

  it("refuses the known poisons in concurrent bursts before they reach the ledger, while the other account's chats all succeed", async () => {
    // A full account: any further deposit would overflow its 64-bit total.
    const whale = await admin.customer({ deposit: "0" })
    const full = await admin.call("POST", `/admin/accounts/${whale.accountId}/deposits`, {
      amount: "9223372036854.775807",
      reference: "all of it"
    })
    assert.strictEqual(full.status, 201)
    const poisons = (round: number): ReadonlyArray<readonly [Pick<RouteFuzz, "as" | "envelope">, Shot]> => [
      [
        { as: "admin", envelope: "openai" },
        {
          method: "POST",
          path: `/admin/accounts/${whale.accountId}/deposits`,
          body: JSON.stringify({ amount: "1", reference: `overflow-${round}` }),
          label: "a deposit that overflows the total"
        }
      ],
      ...["\\u0000", "\\ud800", "\\udfff"].map(
        (bad) =>
          [
            { as: "key", envelope: "openai" },
            {
              method: "POST",
              path: "/v1/videos",
              body: `{"model":"video-model-2.0-fast","prompt":"a cat","metadata":{"images":["https://example.com/${bad}.png"]}}`,
              label: `a video link holding ${bad}`
            }
          ] as const
      ),
      [
        { as: "key", envelope: "openai" },
        {
          method: "POST",
          path: "/v1/videos",
          body: `{"model":"video-model-2.0-fast","prompt":"a cat\\u0000"}`,
          label: "a video prompt holding a NUL"
        }
      ],
      [
        { as: "admin", envelope: "openai" },
        {
          method: "POST",
          path: `/admin/accounts/${whale.accountId}/keys`,
          body: `{"name":"k","models":["m\\ud800"]}`,
          label: "a key model holding a lone surrogate"
        }
      ]
    ]
    let bursting = true
    const traffic = bystanderTraffic(() => !bursting)
    try {
      // Bursts until the other account has had a fair share of requests in flight beside them.
      for (let round = 0; round < 8 || (traffic.outcomes.length < 40 && round < 400); round++) {
        const shots = poisons(round)
        const answers = await Promise.all(shots.map(([fuzz, shot]) => send(fuzz, shot)))
        answers.forEach((answer, index) => {
          const [fuzz, shot] = shots[index]
          assertRefused(fuzz.envelope, answer, `${shot.label} → ${answer.status} ${answer.text.slice(0, 200)}`)
          assert.strictEqual(answer.status, 400, shot.label)
        })
      }
    } finally {
      bursting = false
      await traffic.done
    }
    assertBystanderServed(traffic.outcomes)
    assert.strictEqual((await admin.balance(whale.accountId)).deposited, "9223372036854.775807")
  }, 60_000)
})
