/**
 * What a request cost, on its response: `x-tollgate-cost` is the ledger's charge for it and `x-tollgate-balance` the
 * account's available balance right after, on every JSON endpoint that bills (chat completions, messages, responses,
 * embeddings, images), and in HTTP trailers after a stream's last frame (in-band as SSE comments only when asked);
 * a refused request carries neither.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ClientGateway, closeClientGateway, startClientGateway } from "../../clients/ClientGateway.ts"
import { settledLedger } from "./Billing.ts"
import type { Customer } from "./ChatHarness.ts"
import { postHttp10, postRaw } from "../../support/Trailers.ts"

let h: ClientGateway
beforeAll(async () => {
  h = await startClientGateway()
}, 60_000)
afterAll(() => closeClientGateway(h))

const CALLS: ReadonlyArray<readonly [string, string, unknown]> = [
  ["chat completions", "/v1/chat/completions", { model: "sim-anthropic", messages: [{ role: "user", content: "hi" }] }],
  ["messages", "/v1/messages", { model: "sim-gemini", max_tokens: 64, messages: [{ role: "user", content: "hi" }] }],
  ["responses", "/v1/responses", { model: "sim-responses", input: "hi" }],
  ["embeddings", "/v1/embeddings", { model: "sim-embedding", input: "hello world" }],
  ["images", "/v1/images/generations", { model: "imggen-2", prompt: "a red square", size: "1024x1024" }]
]

/** A call in whichever protocol `path` speaks: every header a key can come in is set. */
const post = (customer: Customer, path: string, body: unknown) =>
  h.fetch(`${h.gateway.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${customer.key}`,
      "x-api-key": customer.key,
      "x-goog-api-key": customer.key,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json"
    },
    body: JSON.stringify(body)
  })

/** The cost said is the ledger's one charge for the customer, and the balance said what `/v1/balance` answers. */
const assertSaid = async (customer: Customer, cost: string | null | undefined, balance: string | null | undefined) => {
  const entries = await settledLedger(h.admin, customer.accountId)
  const charged = entries.filter((e) => e.type === "UsageRecalculated")
  assert.strictEqual(charged.length, 1, "billed once")
  assert.strictEqual(cost, charged[0].amount)
  const answered = (await (
    await h.fetch(`${h.gateway.url}/v1/balance`, { headers: { authorization: `Bearer ${customer.key}` } })
  ).json()) as { available: string }
  assert.strictEqual(balance, answered.available)
}

describe("cost headers", () => {
  for (const [name, path, body] of CALLS) {
    it(`${name}: x-tollgate-cost is the ledger's charge, x-tollgate-balance what is left`, async () => {
      const customer = await h.admin.customer({ deposit: "10" })
      const response = await post(customer, path, body)
      assert.strictEqual(response.status, 200, await response.clone().text())
      await assertSaid(customer, response.headers.get("x-tollgate-cost"), response.headers.get("x-tollgate-balance"))
    })
  }

  const STREAMS: ReadonlyArray<readonly [string, string, unknown]> = [
    [
      "chat completions",
      "/v1/chat/completions",
      { model: "sim-gemini", messages: [{ role: "user", content: "hi" }], stream: true }
    ],
    [
      "messages",
      "/v1/messages",
      { model: "sim-anthropic", max_tokens: 64, messages: [{ role: "user", content: "hi" }], stream: true }
    ],
    ["responses", "/v1/responses", { model: "sim-openai", input: "hi", stream: true }],
    [
      "generateContent",
      "/v1beta/models/sim-responses:streamGenerateContent?alt=sse",
      { contents: [{ role: "user", parts: [{ text: "hi" }] }] }
    ]
  ]
  const headers = (customer: Customer): Record<string, string> => ({
    authorization: `Bearer ${customer.key}`,
    "x-api-key": customer.key,
    "x-goog-api-key": customer.key,
    "anthropic-version": "2023-06-01"
  })

  for (const [name, path, body] of STREAMS) {
    it(`${name} stream: the cost and balance come in HTTP trailers, the body holds only the protocol's frames`, async () => {
      const customer = await h.admin.customer({ deposit: "10" })
      const reply = await postRaw(`${h.gateway.url}${path}`, headers(customer), body)
      assert.strictEqual(reply.status, 200, reply.text)
      assert.strictEqual(reply.headers.trailer, "x-tollgate-cost, x-tollgate-balance")
      assert.notMatch(reply.text, /^:/m, "no SSE comment line")
      assert.notInclude(reply.text, "x-tollgate")
      assert.match(reply.trailers["x-tollgate-cost"] ?? "", /^\d+\.\d{6}$/)
      await assertSaid(customer, reply.trailers["x-tollgate-cost"], reply.trailers["x-tollgate-balance"])
    })

    it(`${name} stream: with x-tollgate-stream-cost: comment, closing SSE comments say it too`, async () => {
      const customer = await h.admin.customer({ deposit: "10" })
      const reply = await postRaw(
        `${h.gateway.url}${path}`,
        { ...headers(customer), "x-tollgate-stream-cost": "comment" },
        body
      )
      assert.strictEqual(reply.status, 200)
      const cost = /^: x-tollgate-cost: (\S+)$/m.exec(reply.text)?.[1]
      const left = /^: x-tollgate-balance: (\S+)$/m.exec(reply.text)?.[1]
      assert.isTrue(
        reply.text.endsWith(`: x-tollgate-cost: ${cost}\n: x-tollgate-balance: ${left}\n\n`),
        reply.text.slice(-300)
      )
      assert.strictEqual(reply.trailers["x-tollgate-cost"], cost)
      await assertSaid(customer, cost, left)
    })
  }

  it("an HTTP/1.0 client gets the stream whole, without trailers (its framing has none)", async () => {
    const customer = await h.admin.customer({ deposit: "10" })
    const exchange = await postHttp10(`${h.gateway.url}/v1/chat/completions`, headers(customer), {
      model: "sim-openai",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    assert.match(exchange, /^HTTP\/1\.[01] 200 /)
    assert.notMatch(exchange, /^trailer:/im)
    assert.include(exchange, "data: [DONE]")
  })

  it("streamGenerateContent without alt=sse streams one JSON array, as Google does; its cost in trailers", async () => {
    const customer = await h.admin.customer({ deposit: "10" })
    const reply = await postRaw(
      `${h.gateway.url}/v1beta/models/sim-anthropic:streamGenerateContent`,
      headers(customer),
      { contents: [{ role: "user", parts: [{ text: "hi" }] }] }
    )
    assert.strictEqual(reply.status, 200, reply.text)
    assert.match(String(reply.headers["content-type"]), /^application\/json/)
    const chunks = JSON.parse(reply.text) as Array<{
      candidates?: Array<{ content?: { parts?: Array<{ text?: string }> } }>
    }>
    assert.isAbove(chunks.length, 0)
    const text = chunks
      .flatMap((c) => c.candidates?.[0]?.content?.parts ?? [])
      .map((p) => p.text ?? "")
      .join("")
    assert.isAbove(text.length, 0)
    await assertSaid(customer, reply.trailers["x-tollgate-cost"], reply.trailers["x-tollgate-balance"])
  })

  it("GET /v1/usage/requests finds each request by its x-request-id, with the cost its header said", async () => {
    const customer = await h.admin.customer({ deposit: "10" })
    const said = new Map<string, string | null>()
    for (let index = 0; index < 3; index++) {
      const response = await post(customer, "/v1/chat/completions", {
        model: "sim-openai",
        messages: [{ role: "user", content: `hi ${index}` }]
      })
      assert.strictEqual(response.status, 200)
      said.set(response.headers.get("x-request-id") ?? "", response.headers.get("x-tollgate-cost"))
    }
    const list = async (query: string, key = customer.key) =>
      h.fetch(`${h.gateway.url}/v1/usage/requests${query}`, { headers: { authorization: `Bearer ${key}` } })
    type Page = {
      data: Array<{ requestId: string; cost: string; status: string; createdAt: string }>
      has_more: boolean
      next_cursor: string | null
    }
    const all = (await (await list("")).json()) as Page
    assert.strictEqual(all.data.length, 3)
    for (const entry of all.data) {
      assert.strictEqual(entry.status, "settled")
      assert.strictEqual(entry.cost, said.get(entry.requestId))
    }
    const [requestId, cost] = [...said.entries()][1] ?? ["", ""]
    const one = (await (await list(`?requestId=${encodeURIComponent(requestId)}`)).json()) as Page
    assert.deepStrictEqual(
      one.data.map((entry) => [entry.requestId, entry.cost]),
      [[requestId, cost]]
    )
    // Pages: newest first, each continuing from the previous one's `next_cursor`.
    const first = (await (await list("?limit=2")).json()) as Page
    assert.isTrue(first.has_more)
    const rest = (await (await list(`?limit=2&cursor=${first.next_cursor ?? ""}`)).json()) as Page
    assert.strictEqual(rest.data.length, 1)
    assert.isFalse(rest.has_more)
    assert.isNull(rest.next_cursor)
    assert.deepStrictEqual(
      [...first.data, ...rest.data].map((entry) => entry.requestId),
      all.data.map((entry) => entry.requestId)
    )
    assert.strictEqual((await list("?cursor=not-a-cursor")).status, 400)
    // Another account's key sees none of them; bad parameters are a 400.
    const other = await h.admin.customer({ deposit: "1" })
    assert.strictEqual(
      ((await (await list(`?requestId=${encodeURIComponent(requestId)}`, other.key)).json()) as Page).data.length,
      0
    )
    assert.strictEqual((await list("?limit=0")).status, 400)
    assert.strictEqual((await list("?before=yesterday")).status, 400)
    const operator = await h.admin.call("GET", `/admin/usage/requests?accountId=${customer.accountId}&limit=5`)
    assert.strictEqual((operator.body as unknown as Page).data.length, 3)
  })

  it("a refused request carries no cost", async () => {
    const customer = await h.admin.customer()
    const response = await h.fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "nope", messages: [{ role: "user", content: "hi" }] })
    })
    assert.strictEqual(response.status, 404)
    assert.isNull(response.headers.get("x-tollgate-cost"))
    assert.isNull(response.headers.get("x-tollgate-balance"))
  })
})
