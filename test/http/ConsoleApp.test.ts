/**
 * What the console relies on besides its own files: the static serving under /console (security headers, the app
 * shell for client routes, no escape from the build directory) and the two admin endpoints added for it, the model
 * catalog with prices and an account's video tasks. Works whether or not `npm run build` has run.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startTestGateway()
}, 60_000)
afterAll(async () => {
  await gateway?.close()
})

const get = (path: string, token: string | null = gateway.adminToken) =>
  fetch(`${gateway.url}${path}`, {
    redirect: "manual",
    headers: token === null ? {} : { authorization: `Bearer ${token}` }
  })

describe("the console's static files", () => {
  it("redirects /console to /console/ and serves the shell with security headers on any client route", async () => {
    const bare = await get("/console", null)
    assert.strictEqual(bare.status, 308)
    assert.strictEqual(bare.headers.get("location"), "/console/")
    for (const path of ["/console/", "/console/accounts/123", "/console/a/%2e%2e%2f%2e%2e%2fpackage.json"]) {
      const response = await get(path, null)
      // 200 with the built app, 503 with instructions before `npm run build`: HTML either way, never another file.
      assert.include([200, 503], response.status, path)
      assert.match(response.headers.get("content-type") ?? "", /^text\/html/)
      assert.match(response.headers.get("content-security-policy") ?? "", /default-src 'self'.*frame-ancestors 'none'/)
      assert.strictEqual(response.headers.get("x-content-type-options"), "nosniff")
      assert.strictEqual(response.headers.get("x-frame-options"), "DENY")
      assert.strictEqual(response.headers.get("referrer-policy"), "no-referrer")
      assert.notInclude(await response.text(), '"name": "tollgate"')
    }
  })

  it("answers 404 for a missing asset instead of the shell", async () => {
    const response = await get("/console/assets/nope-123.js", null)
    assert.strictEqual(response.status, 404)
  })
})

describe("admin endpoints used by the console", () => {
  it("GET /admin/models lists every model with its kind, endpoint and prices as decimal strings", async () => {
    assert.strictEqual((await get("/admin/models", null)).status, 401)
    const body = (await (await get("/admin/models")).json()) as {
      data: Array<{ id: string; kind: string; endpoint: string; pricing: Record<string, string> }>
    }
    const byId = new Map(body.data.map((m) => [m.id, m]))
    assert.deepStrictEqual(byId.get("sim-openai")?.pricing, { input: "0.150000", output: "0.600000" })
    assert.strictEqual(byId.get("sim-openai")?.kind, "chat")
    assert.deepStrictEqual(byId.get("imgchat-2.5-flash-image")?.pricing, { perCall: "0.039000" })
    assert.strictEqual(byId.get("imggen-2")?.endpoint, "/v1/images/generations")
    assert.deepStrictEqual(byId.get("video-model-2.0-fast")?.pricing, { output: "1.400000" })
    assert.strictEqual(byId.get("video-model-2.0-fast")?.kind, "videos")
  })

  it("GET /admin/accounts/{id}/videos lists an account's tasks; unknown accounts and videos are 404", async () => {
    const account = (await (
      await fetch(`${gateway.url}/admin/accounts`, {
        method: "POST",
        headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "videos" })
      })
    ).json()) as { id: string }
    assert.strictEqual((await get(`/admin/accounts/${account.id}/videos`, null)).status, 401)
    const list = await get(`/admin/accounts/${account.id}/videos`)
    assert.strictEqual(list.status, 200)
    assert.deepStrictEqual(await list.json(), {
      object: "list",
      data: [],
      first_id: null,
      last_id: null,
      has_more: false
    })
    assert.strictEqual((await get("/admin/accounts/00000000-0000-4000-8000-000000000000/videos")).status, 404)
    assert.strictEqual((await get(`/admin/accounts/${account.id}/videos/video_nope/content`)).status, 404)
  })
})
