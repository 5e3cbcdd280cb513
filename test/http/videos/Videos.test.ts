/**
 * `/v1/videos` end to end: the official `openai` SDK submits (multipart), polls and downloads; JSON clients use the
 * spec's `metadata`; every validation error names its field; the ledger shows exactly the hold, the recalculation
 * and the refund; a failed task refunds in full; tasks belong to their account; content supports `Range`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { probe } from "../../support/Ffprobe.ts"
import { assertOpenAiSchema, skipWithoutOpenAiSpec } from "../../support/OpenAiSchema.ts"
import { closeAfterReplay } from "../chat/ChatHarness.ts"
import { api, FAST, SORA, startVideoHarness, type VideoHarness, type VideoWire, waitForVideo } from "./VideoHarness.ts"

let h: VideoHarness
let dir: string
beforeAll(async () => {
  h = await startVideoHarness()
  dir = mkdtempSync(join(tmpdir(), "tollgate-videos-test-"))
}, 60_000)
afterAll(async () => {
  await closeAfterReplay(h)
  rmSync(dir, { recursive: true, force: true })
})

/** 480p 16:9 is 864×496; 4 s is 97 frames: ceil(864 × 496 × 97 / 1024) = 40,595 tokens; at 1.40/1M: 0.056833. */
const SMALL = { resolution: "480p", ratio: "16:9" }
const SMALL_TOKENS = 40_595
const SMALL_FAST_COST = "0.056833"

const submit = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api(h.gateway, key, "POST", "/v1/videos", body, headers)

const entriesOf = async (accountId: string) =>
  (await h.admin.ledger(accountId)).filter((e) => e.type !== "AccountOpened" && e.type !== "FundsDeposited")

skipWithoutOpenAiSpec()

describe("video tasks through the official openai SDK", () => {
  it("videos.create (multipart) → retrieve until completed → downloadContent: a real MP4 with audio", async () => {
    const customer = await h.admin.customer()
    const openai = h.client(customer.key)
    const created = await openai.videos.create({
      model: FAST,
      prompt: "A red fox trots through fresh snow at dawn",
      seconds: "4",
      size: "1280x720"
    })
    assert.strictEqual(created.object, "video")
    assert.strictEqual(created.status, "queued")
    assert.strictEqual(created.progress, 0)
    assert.strictEqual(created.model, FAST)
    assert.isNumber(created.created_at)
    let video = await openai.videos.retrieve(created.id)
    const until = Date.now() + 30_000
    while (video.status !== "completed" && video.status !== "failed" && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      video = await openai.videos.retrieve(created.id)
    }
    assert.strictEqual(video.status, "completed", JSON.stringify(video))
    assert.strictEqual(video.progress, 100)
    assertOpenAiSchema("VideoResource", video)
    const wire = video as unknown as VideoWire
    assert.strictEqual(wire.metadata.url, `${h.gateway.url}/v1/videos/${created.id}/content`)
    assert.deepStrictEqual(
      { resolution: wire.metadata.resolution, ratio: wire.metadata.ratio, input_type: wire.metadata.input_type },
      { resolution: "720p", ratio: "16:9", input_type: "text_to_video" }
    )
    assert.isNumber(video.completed_at)
    assert.strictEqual((video.expires_at as number) - (video.completed_at as number), 7 * 86_400)
    const response = await openai.videos.downloadContent(created.id)
    assert.strictEqual(response.headers.get("content-type"), "video/mp4")
    const bytes = new Uint8Array(await response.arrayBuffer())
    assert.strictEqual(Number(response.headers.get("content-length")), bytes.byteLength)
    const file = join(dir, "sdk.mp4")
    writeFileSync(file, bytes)
    const info = await probe(file)
    assert.strictEqual(info.video.codec, "h264")
    assert.deepStrictEqual([info.video.width, info.video.height], [1280, 720])
    assert.approximately(info.durationSeconds, 4, 0.1)
    assert.strictEqual(info.audio?.codec, "aac")
  })

  it("a key of another account gets 404 for the task and its content", async () => {
    const owner = await h.admin.customer()
    const stranger = await h.admin.customer()
    const { body } = await submit(owner.key, { model: FAST, prompt: "mine", seconds: "4", metadata: SMALL })
    for (const path of [`/v1/videos/${body.id}`, `/v1/videos/${body.id}/content`]) {
      const answer = await api(h.gateway, stranger.key, "GET", path)
      assert.strictEqual(answer.status, 404, path)
      assert.strictEqual(answer.body.error.code, "video_not_found")
    }
    const other = await h
      .client(stranger.key)
      .videos.retrieve(body.id)
      .catch((error: unknown) => error)
    assert.instanceOf(other, OpenAI.NotFoundError)
    await waitForVideo(h.gateway, owner.key, body.id)
  })
})

describe("billing of a video task", () => {
  it("holds the estimate on submit and settles from the upstream's tokens (equal here: nothing to refund)", async () => {
    const customer = await h.admin.customer({ deposit: "5" })
    const submitted = await submit(customer.key, {
      model: FAST,
      prompt: "A lighthouse in a storm",
      seconds: "4",
      metadata: SMALL
    })
    assert.strictEqual(submitted.status, 200, JSON.stringify(submitted.body))
    assert.deepStrictEqual(
      Object.keys(submitted.body).filter((k) =>
        ["id", "object", "model", "status", "progress", "created_at"].includes(k)
      ).length,
      6
    )
    assert.strictEqual(submitted.body.charge.held, SMALL_FAST_COST)
    const held = await h.admin.balance(customer.accountId)
    assert.strictEqual(held.held, SMALL_FAST_COST)
    const done = await waitForVideo(h.gateway, customer.key, submitted.body.id)
    assert.strictEqual(done.status, "completed")
    assert.deepStrictEqual(done.charge, {
      held: SMALL_FAST_COST,
      captured: SMALL_FAST_COST,
      refunded: "0.000000",
      video_tokens: SMALL_TOKENS
    } as unknown as VideoWire["charge"])
    const entries = await entriesOf(customer.accountId)
    assert.deepStrictEqual(
      entries.map((e) => [e.type, e.amount]),
      [
        ["HoldPlaced", SMALL_FAST_COST],
        ["UsageRecalculated", SMALL_FAST_COST]
      ]
    )
    const balance = await h.admin.balance(customer.accountId)
    assert.deepStrictEqual(balance, {
      deposited: "5.000000",
      captured: SMALL_FAST_COST,
      held: "0.000000",
      available: "4.943167"
    })
  })

  it("a shorter clip than asked: settled from the upstream's tokens, the difference refunded, exactly", async () => {
    const customer = await h.admin.customer()
    // 8 s asked: ceil(864 × 496 × 193 / 1024) = 80,771 tokens → 0.113080 held; the upstream delivers 4 s: 40,595.
    const submitted = await submit(customer.key, {
      model: FAST,
      prompt: "the model picks its own length [sim:video-seconds=4]",
      seconds: "8",
      metadata: SMALL
    })
    assert.strictEqual(submitted.body.charge.held, "0.113080")
    const done = await waitForVideo(h.gateway, customer.key, submitted.body.id)
    assert.strictEqual(done.status, "completed", JSON.stringify(done))
    assert.deepStrictEqual(
      (await entriesOf(customer.accountId)).map((e) => [e.type, e.amount, e.data.reason ?? null]),
      [
        ["HoldPlaced", "0.113080", null],
        ["UsageRecalculated", SMALL_FAST_COST, null],
        ["RefundIssued", "0.056247", "unused"]
      ]
    )
    const recalculated = (await entriesOf(customer.accountId))[1]
    assert.deepStrictEqual(recalculated.data.usage, { videoTokens: String(SMALL_TOKENS), reported: true, seconds: 4 })
    assert.deepStrictEqual(await h.admin.balance(customer.accountId), {
      deposited: "10.000000",
      captured: SMALL_FAST_COST,
      held: "0.000000",
      available: "9.943167"
    })
  })

  it("an upstream that reports no tokens (openai-videos) is billed by the formula on the delivered file", async () => {
    const customer = await h.admin.customer()
    const submitted = await submit(customer.key, { model: SORA, prompt: "waves", seconds: "4", metadata: SMALL })
    assert.strictEqual(submitted.status, 200, JSON.stringify(submitted.body))
    const done = await waitForVideo(h.gateway, customer.key, submitted.body.id)
    assert.strictEqual(done.status, "completed", JSON.stringify(done))
    // 40,595 tokens at 1.00/1M = 0.040595, measured from the MP4's 864×496 × 4 s.
    assert.strictEqual(done.charge.captured, "0.040595")
    const shorter = await submit(customer.key, {
      model: SORA,
      prompt: "waves, cut short [sim:video-seconds=4]",
      seconds: "8",
      metadata: SMALL
    })
    const cut = await waitForVideo(h.gateway, customer.key, shorter.body.id)
    // Held for 8 s (80,771 tokens → 0.080771); the delivered file is 4 s long.
    assert.deepStrictEqual(
      [cut.charge.held, cut.charge.captured, cut.charge.refunded],
      ["0.080771", "0.040595", "0.040176"]
    )
  })

  it("an upstream that answers 404 for the task's first polls (not replicated yet): it completes, billed once", async () => {
    const customer = await h.admin.customer()
    const submitted = await submit(customer.key, {
      model: FAST,
      prompt: "a lighthouse the vendor does not see at first [sim:video-404=2]",
      seconds: "4",
      metadata: SMALL
    })
    assert.strictEqual(submitted.status, 200, JSON.stringify(submitted.body))
    const done = await waitForVideo(h.gateway, customer.key, submitted.body.id)
    assert.strictEqual(done.status, "completed", JSON.stringify(done))
    const entries = await entriesOf(customer.accountId)
    assert.deepStrictEqual(
      entries.map((e) => [e.type, e.amount]),
      [
        ["HoldPlaced", SMALL_FAST_COST],
        ["UsageRecalculated", SMALL_FAST_COST]
      ]
    )
    const balance = await h.admin.balance(customer.accountId)
    assert.deepStrictEqual([balance.captured, balance.held], [SMALL_FAST_COST, "0.000000"])
  })

  it("a failed task refunds the whole hold, once", async () => {
    const customer = await h.admin.customer()
    const submitted = await submit(customer.key, {
      model: FAST,
      prompt: "a cartoon [sim:video-fail]",
      seconds: "4",
      metadata: SMALL
    })
    const done = await waitForVideo(h.gateway, customer.key, submitted.body.id)
    assert.strictEqual(done.status, "failed")
    assert.isString(done.error?.code)
    assert.isString(done.error?.message)
    assert.isUndefined(done.metadata.url)
    const entries = await entriesOf(customer.accountId)
    assert.deepStrictEqual(
      entries.map((e) => [e.type, e.amount, e.data.reason ?? null]),
      [
        ["HoldPlaced", SMALL_FAST_COST, null],
        ["RefundIssued", SMALL_FAST_COST, "failed"]
      ]
    )
    const content = await api(h.gateway, customer.key, "GET", `/v1/videos/${submitted.body.id}/content`)
    assert.strictEqual(content.status, 409)
    assert.strictEqual(content.body.error.code, "video_not_ready")
    assert.deepStrictEqual(await h.admin.balance(customer.accountId), {
      deposited: "10.000000",
      captured: "0.000000",
      held: "0.000000",
      available: "10.000000"
    })
  })

  it("a balance below the estimate is refused with 402 and no task", async () => {
    const customer = await h.admin.customer({ deposit: "0.01" })
    const refused = await submit(customer.key, { model: FAST, prompt: "too dear", seconds: "4", metadata: SMALL })
    assert.strictEqual(refused.status, 402)
    assert.strictEqual(refused.body.error.code, "insufficient_quota")
    const list = await api(h.gateway, customer.key, "GET", "/v1/videos")
    assert.deepStrictEqual(list.body.data, [])
  })

  it("Idempotency-Key: a retried submit returns the same task and holds once; another body is refused", async () => {
    const customer = await h.admin.customer()
    const body = { model: FAST, prompt: "retry me", seconds: "4", metadata: SMALL }
    const headers = { "idempotency-key": "submit-1" }
    const first = await submit(customer.key, body, headers)
    const again = await submit(customer.key, body, headers)
    assert.strictEqual(first.status, 200)
    assert.strictEqual(again.status, 200)
    assert.strictEqual(again.body.id, first.body.id)
    assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
    const other = await submit(customer.key, { ...body, prompt: "something else" }, headers)
    assert.strictEqual(other.status, 409)
    assert.strictEqual(other.body.error.code, "idempotency_key_reused")
    // The same key on another account is another task.
    const stranger = await h.admin.customer()
    const theirs = await submit(stranger.key, body, headers)
    assert.notStrictEqual(theirs.body.id, first.body.id)
    await waitForVideo(h.gateway, customer.key, first.body.id)
    await waitForVideo(h.gateway, stranger.key, theirs.body.id)
    const holds = (await entriesOf(customer.accountId)).filter((e) => e.type === "HoldPlaced")
    assert.strictEqual(holds.length, 1)
  })
})

describe("content download", () => {
  it("409 before completion, then the file with Range support", async () => {
    const customer = await h.admin.customer()
    const { body } = await submit(customer.key, { model: FAST, prompt: "ranges", seconds: "4", metadata: SMALL })
    const early = await api(h.gateway, customer.key, "GET", `/v1/videos/${body.id}/content`)
    assert.strictEqual(early.status, 409)
    assert.match(early.body.error.message, /queued|in_progress/)
    await waitForVideo(h.gateway, customer.key, body.id)
    const whole = await fetch(`${h.gateway.url}/v1/videos/${body.id}/content`, {
      headers: { authorization: `Bearer ${customer.key}` }
    })
    const all = new Uint8Array(await whole.arrayBuffer())
    assert.strictEqual(whole.headers.get("accept-ranges"), "bytes")
    const part = await fetch(`${h.gateway.url}/v1/videos/${body.id}/content`, {
      headers: { authorization: `Bearer ${customer.key}`, range: "bytes=100-199" }
    })
    assert.strictEqual(part.status, 206)
    assert.strictEqual(part.headers.get("content-range"), `bytes 100-199/${all.byteLength}`)
    assert.deepStrictEqual(new Uint8Array(await part.arrayBuffer()), all.slice(100, 200))
    const tail = await fetch(`${h.gateway.url}/v1/videos/${body.id}/content`, {
      headers: { authorization: `Bearer ${customer.key}`, range: "bytes=-10" }
    })
    assert.deepStrictEqual(new Uint8Array(await tail.arrayBuffer()), all.slice(all.byteLength - 10))
    const beyond = await fetch(`${h.gateway.url}/v1/videos/${body.id}/content`, {
      headers: { authorization: `Bearer ${customer.key}`, range: `bytes=${all.byteLength + 5}-` }
    })
    assert.strictEqual(beyond.status, 416)
    assert.strictEqual(beyond.headers.get("content-range"), `bytes */${all.byteLength}`)
  })
})

describe("listing", () => {
  it("lists the caller's tasks newest first with cursor pagination", async () => {
    const customer = await h.admin.customer()
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const { body } = await submit(customer.key, { model: FAST, prompt: `clip ${i}`, seconds: "4", metadata: SMALL })
      ids.push(body.id)
    }
    const first = await api(h.gateway, customer.key, "GET", "/v1/videos?limit=2")
    assert.strictEqual(first.body.object, "list")
    assert.deepStrictEqual(
      first.body.data.map((v: VideoWire) => v.id),
      [ids[2], ids[1]]
    )
    assert.strictEqual(first.body.has_more, true)
    const second = await api(h.gateway, customer.key, "GET", `/v1/videos?limit=2&after=${first.body.last_id}`)
    assert.deepStrictEqual(
      second.body.data.map((v: VideoWire) => v.id),
      [ids[0]]
    )
    assert.strictEqual(second.body.has_more, false)
    const page = await h.client(customer.key).videos.list({ order: "asc" })
    assert.deepStrictEqual(
      page.data.map((v) => v.id),
      ids
    )
    for (const id of ids) await waitForVideo(h.gateway, customer.key, id)
  })
})

describe("multipart submit", () => {
  it("metadata as a JSON string field: the task carries its resolution and ratio, and the upstream gets them", async () => {
    const customer = await h.admin.customer()
    const prompt = `multipart metadata ${Math.random()}`
    const form = new FormData()
    form.append("model", FAST)
    form.append("prompt", prompt)
    form.append("seconds", "4")
    form.append("metadata", JSON.stringify({ resolution: "720p", ratio: "9:16" }))
    const response = await fetch(`${h.gateway.url}/v1/videos`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}` },
      body: form
    })
    const created = await response.json()
    assert.strictEqual(response.status, 200, JSON.stringify(created))
    assert.strictEqual(created.status, "queued")
    const seen = await api(h.gateway, customer.key, "GET", `/v1/videos/${created.id}`)
    assert.deepStrictEqual(
      [seen.body.metadata.resolution, seen.body.metadata.ratio, seen.body.metadata.input_type],
      ["720p", "9:16", "text_to_video"]
    )
    const done = await waitForVideo(h.gateway, customer.key, created.id)
    assert.strictEqual(done.status, "completed", JSON.stringify(done))
    assert.deepStrictEqual([done.metadata.resolution, done.metadata.ratio], ["720p", "9:16"])
    const call = h.sim
      .calls()
      .find((x) => x.path.endsWith("/contents/generations/tasks") && JSON.stringify(x.body).includes(prompt))
    const body = call?.body as { resolution: string; ratio: string; duration: number }
    assert.deepStrictEqual([body.resolution, body.ratio, body.duration], ["720p", "9:16", 4])
  })

  it("metadata as a JSON string that is not an object: 400 naming metadata", async () => {
    const customer = await h.admin.customer()
    const form = new FormData()
    form.append("model", FAST)
    form.append("prompt", "bad metadata")
    form.append("seconds", "4")
    form.append("metadata", "[1, 2]")
    const response = await fetch(`${h.gateway.url}/v1/videos`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}` },
      body: form
    })
    const answer = await response.json()
    assert.strictEqual(response.status, 400, JSON.stringify(answer))
    assert.strictEqual(answer.error.param, "metadata")
  })
})

describe("input modes", () => {
  const png = (n: number) => `https://images.example.com/frame-${n}.png`
  const cases: ReadonlyArray<{ name: string; metadata: Record<string, unknown>; inputType: string; roles: string[] }> =
    [
      { name: "text to video", metadata: {}, inputType: "text_to_video", roles: [] },
      { name: "one image", metadata: { images: [png(1)] }, inputType: "reference", roles: ["first_frame"] },
      {
        name: "first and last frame",
        metadata: { images: [png(1), png(2)] },
        inputType: "first_last_frame",
        roles: ["first_frame", "last_frame"]
      },
      {
        name: "three images",
        metadata: { images: [png(1), png(2), png(3)] },
        inputType: "reference",
        roles: ["reference_image", "reference_image", "reference_image"]
      },
      {
        name: "one video",
        metadata: { videos: ["https://videos.example.com/a.mp4"] },
        inputType: "reference",
        roles: ["reference_video"]
      },
      {
        name: "two videos",
        metadata: { videos: ["https://videos.example.com/a.mp4", "https://videos.example.com/b.mp4"] },
        inputType: "reference",
        roles: ["reference_video", "reference_video"]
      }
    ]
  for (const c of cases) {
    it(`${c.name} → input_type ${c.inputType}, sent upstream with roles [${c.roles.join(", ")}]`, async () => {
      const customer = await h.admin.customer()
      const prompt = `mode ${c.name} ${Math.random()}`
      const { status, body } = await submit(customer.key, {
        model: FAST,
        prompt,
        seconds: "4",
        metadata: { ...SMALL, ...c.metadata }
      })
      assert.strictEqual(status, 200, JSON.stringify(body))
      assert.strictEqual(body.metadata.input_type, c.inputType)
      await waitForVideo(h.gateway, customer.key, body.id)
      const call = h.sim
        .calls()
        .find((x) => x.path.endsWith("/contents/generations/tasks") && JSON.stringify(x.body).includes(prompt))
      assert.isDefined(call)
      const content = (call as { body: { content: ReadonlyArray<{ type: string; role?: string }> } }).body.content
      assert.strictEqual(content[0].type, "text")
      assert.deepStrictEqual(
        content.slice(1).map((part) => part.role),
        c.roles
      )
    })
  }
})

describe("validation", () => {
  const bad: ReadonlyArray<{ body: Record<string, unknown>; status: number; param: string | null; text: RegExp }> = [
    { body: { model: FAST, seconds: "4" }, status: 400, param: "prompt", text: /prompt/ },
    { body: { model: "no-such-video", prompt: "x" }, status: 404, param: "model", text: /no-such-video/ },
    { body: { model: FAST, prompt: "x", seconds: "3" }, status: 400, param: "seconds", text: /4/ },
    { body: { model: FAST, prompt: "x", seconds: "16" }, status: 400, param: "seconds", text: /15/ },
    { body: { model: FAST, prompt: "x", seconds: "4.5" }, status: 400, param: "seconds", text: /integer/ },
    {
      body: { model: FAST, prompt: "x", metadata: { resolution: "4k" } },
      status: 400,
      param: "metadata.resolution",
      text: /480p/
    },
    {
      body: { model: FAST, prompt: "x", metadata: { ratio: "5:4" } },
      status: 400,
      param: "metadata.ratio",
      text: /16:9/
    },
    {
      body: { model: FAST, prompt: "x", metadata: { ratio: "wide" } },
      status: 400,
      param: "metadata.ratio",
      text: /:/
    },
    {
      body: { model: FAST, prompt: "x", metadata: { input_type: "sketch" } },
      status: 400,
      param: "metadata.input_type",
      text: /text_to_video/
    },
    {
      body: {
        model: FAST,
        prompt: "x",
        metadata: { input_type: "text_to_video", images: ["https://a.example/1.png"] }
      },
      status: 400,
      param: "metadata.input_type",
      text: /image/
    },
    {
      body: {
        model: FAST,
        prompt: "x",
        metadata: { images: Array.from({ length: 10 }, (_, i) => `https://a.example/${i}.png`) }
      },
      status: 400,
      param: "metadata.images",
      text: /9/
    },
    {
      body: {
        model: FAST,
        prompt: "x",
        metadata: { videos: Array.from({ length: 4 }, (_, i) => `https://a.example/${i}.mp4`) }
      },
      status: 400,
      param: "metadata.videos",
      text: /3/
    },
    {
      body: { model: FAST, prompt: "x", metadata: { images: ["ftp://a.example/1.png"] } },
      status: 400,
      param: "metadata.images[0]",
      text: /http/i
    },
    {
      body: { model: FAST, prompt: "x", metadata: { videos: ["http://10.0.0.1/1.mp4"] } },
      status: 400,
      param: "metadata.videos[0]",
      text: /private/i
    },
    {
      body: { model: FAST, prompt: "x", metadata: { images: ["data:image/png;base64,iVBORw0KGgo="] } },
      status: 400,
      param: "metadata.images[0]",
      text: /base64|URL/i
    },
    { body: { model: FAST, prompt: "x", size: "640x480" }, status: 400, param: "size", text: /640x480/ },
    { body: { model: "sim-openai", prompt: "x" }, status: 400, param: "model", text: /chat/ },
    // The Sora-style upstream cannot take two frames: refused before anything is held.
    {
      body: { model: SORA, prompt: "x", metadata: { images: ["https://a.example/1.png", "https://a.example/2.png"] } },
      status: 400,
      param: null,
      text: /first\/last-frame/
    }
  ]
  for (const c of bad) {
    it(`${JSON.stringify(c.body).slice(0, 110)} → ${c.status} ${c.param}`, async () => {
      const customer = await h.admin.customer()
      const answer = await submit(customer.key, c.body)
      assert.strictEqual(answer.status, c.status, JSON.stringify(answer.body))
      assert.strictEqual(answer.body.error.param, c.param)
      assert.match(answer.body.error.message, c.text)
      assert.deepStrictEqual(await entriesOf(customer.accountId), [])
    })
  }

  it("no key → 401 in the OpenAI envelope", async () => {
    const response = await fetch(`${h.gateway.url}/v1/videos`, { method: "POST", body: "{}" })
    assert.strictEqual(response.status, 401)
    const body = await response.json()
    assert.isString(body.error.message)
  })
})
