/**
 * Video input links and the finished video's download, through the real gateway: a link must be a public http(s)
 * address (the guarded fetcher's rule, every spelling of a private address included); a file extension naming a
 * format the spec excludes (.gif, .mov) is refused without a request;
 * where a quick HEAD answers, its content type must be one the spec names; a HEAD that fails proves nothing. The
 * vendor's result link is fetched through the same guard: one that leads to a private address fails the task with a
 * full refund.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { closeAfterReplay } from "../chat/ChatHarness.ts"
import { api, FAST, startVideoHarness, type VideoHarness, waitForVideo } from "./VideoHarness.ts"

/** A link host the gateway may reach (allow-listed), standing in for a public CDN: loopback, but not 127.0.0.1. */
const LINK_HOST = "127.0.0.2"

let h: VideoHarness
let links: Server
let linkBase: string
const heads: Array<string> = []

beforeAll(async () => {
  links = createServer((req, res) => {
    if (req.method === "HEAD") heads.push(req.url ?? "")
    switch (req.url) {
      case "/frames/first": // a CDN link without an extension
      case "/frames/second":
        res.writeHead(200, { "content-type": "image/png", "content-length": "1024" }).end()
        return
      case "/clips/one":
        res.writeHead(200, { "content-type": "video/mp4; codecs=avc1" }).end()
        return
      case "/page.png": // an extension that lies
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end()
        return
      case "/frame.gif":
        res.writeHead(200, { "content-type": "image/gif" }).end()
        return
      case "/no-head":
        res.writeHead(req.method === "HEAD" ? 405 : 200, { "content-type": "image/png" }).end()
        return
      case "/broken":
        res.writeHead(500).end()
        return
      case "/silent": // never answers: the HEAD times out
        return
      case "/to-private":
        res.writeHead(302, { location: "http://10.0.0.7/frame.png" }).end()
        return
      default:
        res.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve) => links.listen(0, LINK_HOST, resolve))
  linkBase = `http://${LINK_HOST}:${(links.address() as AddressInfo).port}`
  h = await startVideoHarness({ fetchAllowHosts: [LINK_HOST] })
}, 60_000)

afterAll(async () => {
  links.closeAllConnections()
  await new Promise((resolve) => links.close(resolve))
  await closeAfterReplay(h)
})

const submit = (key: string, metadata: Record<string, unknown>, prompt = "a lighthouse in a storm") =>
  api(h.gateway, key, "POST", "/v1/videos", {
    model: FAST,
    prompt,
    seconds: "4",
    metadata: { resolution: "480p", ratio: "16:9", ...metadata }
  })

const nonDeposit = async (accountId: string) =>
  (await h.admin.ledger(accountId)).filter((e) => e.type !== "AccountOpened" && e.type !== "FundsDeposited")

/** Submits a refused link and checks the 400 names it, and that nothing was held, charged or recorded. */
const expectRefused = async (
  field: "images" | "videos",
  link: string,
  text: RegExp,
  before: ReadonlyArray<string> = []
) => {
  const customer = await h.admin.customer()
  const list = [...before, link]
  const param = `metadata.${field}[${list.length - 1}]`
  const response = await submit(customer.key, { [field]: list })
  assert.strictEqual(response.status, 400, `${link}: ${JSON.stringify(response.body)}`)
  assert.strictEqual(response.body.error.type, "invalid_request_error")
  assert.strictEqual(response.body.error.param, param, link)
  assert.include(response.body.error.message, param)
  assert.match(response.body.error.message, text, link)
  assert.deepStrictEqual(await h.admin.balance(customer.accountId), {
    deposited: "10.000000",
    captured: "0.000000",
    held: "0.000000",
    available: "10.000000"
  })
  assert.deepStrictEqual(await nonDeposit(customer.accountId), [])
  const listed = await api(h.gateway, customer.key, "GET", "/v1/videos")
  assert.deepStrictEqual(listed.body.data, [])
}

describe("video input links: public addresses only", () => {
  const refused: ReadonlyArray<readonly [link: string, text: RegExp]> = [
    ["http://127.0.0.1/x.jpg", /loopback/],
    ["http://127.1.2.3:8080/frame.png", /loopback/],
    ["http://2130706433/frame.png", /loopback/], // decimal
    ["http://0x7f000001/frame.png", /loopback/], // hex
    ["http://0177.0.0.1/frame.png", /loopback/], // octal
    ["http://localhost/frame.png", /loopback/], // a name that resolves to one
    ["http://10.1.2.3/frame.png", /private/],
    ["http://172.16.0.1/frame.png", /private/],
    ["http://192.168.1.10/frame.png", /private/],
    ["http://169.254.169.254/latest/meta-data/frame.png", /metadata/],
    ["http://metadata.google.internal/frame.png", /metadata/],
    ["http://169.254.10.20/frame.png", /link-local/],
    ["http://100.64.0.1/frame.png", /carrier-grade NAT/],
    ["http://224.0.0.1/frame.png", /multicast/],
    ["http://240.0.0.1/frame.png", /reserved/],
    ["http://0.0.0.0/frame.png", /unspecified/],
    ["http://[::1]/frame.png", /loopback/],
    ["http://[::ffff:127.0.0.1]/frame.png", /loopback/],
    ["http://[::ffff:a00:1]/frame.png", /private/],
    ["http://[fe80::1]/frame.png", /link-local/],
    ["http://[fd12:3456::1]/frame.png", /unique-local/]
  ]
  for (const [link, text] of refused) {
    it(`refuses ${link} (400 naming the link, nothing held)`, async () => {
      await expectRefused("images", link, text, ["https://a.example/first.png"])
    })
  }

  it("refuses a clip on a private address under metadata.videos", async () => {
    await expectRefused("videos", "http://192.168.0.20/clip.mp4", /private/)
  })

  it("refuses a link whose HEAD redirects to a private address", async () => {
    await expectRefused("images", `${linkBase}/to-private`, /10\.0\.0\.7.*private/)
  })

  it("refuses non-http(s) schemes", async () => {
    await expectRefused("images", "ftp://a.example/frame.png", /http/)
    await expectRefused("videos", "file:///etc/clip.mp4", /http/)
  })
})

describe("video input links: any path, checked by their content type", () => {
  it("accepts links without an extension whose HEAD says image/png and video/mp4; the task completes", async () => {
    const customer = await h.admin.customer()
    const images = [`${linkBase}/frames/first`, `${linkBase}/frames/second`]
    const response = await submit(customer.key, { images, videos: [`${linkBase}/clips/one`] })
    assert.strictEqual(response.status, 200, JSON.stringify(response.body))
    assert.strictEqual(response.body.metadata.input_type, "reference")
    assert.includeMembers(heads, ["/frames/first", "/frames/second", "/clips/one"])
    const done = await waitForVideo(h.gateway, customer.key, response.body.id)
    assert.strictEqual(done.status, "completed", JSON.stringify(done))
  })

  it("refuses a link whose content type is not JPG, PNG or WebP, naming it", async () => {
    await expectRefused("images", `${linkBase}/page.png`, /text\/html/, [`${linkBase}/frames/first`])
  })

  it("refuses a link whose own name rules it out (.gif image, .mov clip) without asking its host", async () => {
    await expectRefused("images", `${linkBase}/frame.gif`, /\.gif file/)
    await expectRefused("images", `${linkBase}/frame.GIF?size=large`, /\.gif file/)
    await expectRefused("images", "https://cdn.invalid/assets/frame.gif", /\.gif file, not a JPG, PNG or WebP image/)
    await expectRefused("videos", "https://cdn.invalid/assets/clip.mov", /\.mov file, not an MP4 video/)
    await expectRefused("videos", `${linkBase}/frame.png`, /\.png file, not an MP4 video/)
    assert.notInclude(heads, "/frame.gif")
    assert.notInclude(heads, "/frame.png")
  })

  it("refuses an image served as a clip", async () => {
    await expectRefused("videos", `${linkBase}/frames/first`, /image\/png.*MP4/)
  })

  it("a HEAD refused (405), failing (500) or unanswered does not refuse the link: the vendor judges it", async () => {
    const customer = await h.admin.customer()
    const started = Date.now()
    const response = await submit(customer.key, {
      images: [`${linkBase}/no-head`, `${linkBase}/broken`, `${linkBase}/silent`]
    })
    assert.strictEqual(response.status, 200, JSON.stringify(response.body))
    assert.isBelow(Date.now() - started, 10_000)
  }, 20_000)

  it("an unresolvable public-looking name is passed on: the vendor judges it", async () => {
    const customer = await h.admin.customer()
    const response = await submit(customer.key, { images: ["https://cdn.invalid/assets/7f3a9c"] })
    assert.strictEqual(response.status, 200, JSON.stringify(response.body))
  })
})

describe("the finished video is downloaded through the guarded fetcher", () => {
  it("a result link off the upstream's origin, on a loopback address: the task fails and is refunded in full", async () => {
    // The config names the simulator `localhost`; its result links carry 127.0.0.1, which nothing allows.
    const other = await startVideoHarness({ upstreamHost: "localhost" })
    try {
      const customer = await other.admin.customer()
      const response = await api(other.gateway, customer.key, "POST", "/v1/videos", {
        model: FAST,
        prompt: "a fox in the snow",
        seconds: "4",
        metadata: { resolution: "480p", ratio: "16:9" }
      })
      assert.strictEqual(response.status, 200, JSON.stringify(response.body))
      const done = await waitForVideo(other.gateway, customer.key, response.body.id)
      assert.strictEqual(done.status, "failed", JSON.stringify(done))
      assert.strictEqual(done.error?.code, "video_link_refused")
      assert.match(done.error?.message ?? "", /127\.0\.0\.1.*loopback/)
      assert.strictEqual(done.charge.refunded, done.charge.held)
      assert.deepStrictEqual(await other.admin.balance(customer.accountId), {
        deposited: "10.000000",
        captured: "0.000000",
        held: "0.000000",
        available: "10.000000"
      })
      const files = other.sim.calls().filter((call) => call.path.includes(".mp4"))
      assert.deepStrictEqual(files, [], "the gateway must not have fetched the file")
    } finally {
      await closeAfterReplay(other)
    }
  }, 60_000)

  it("the same link with its address allow-listed: the download goes through and the task completes", async () => {
    const other = await startVideoHarness({ upstreamHost: "localhost", fetchAllowHosts: ["127.0.0.1"] })
    try {
      const customer = await other.admin.customer()
      const response = await api(other.gateway, customer.key, "POST", "/v1/videos", {
        model: FAST,
        prompt: "a fox in the snow",
        seconds: "4",
        metadata: { resolution: "480p", ratio: "16:9" }
      })
      assert.strictEqual(response.status, 200, JSON.stringify(response.body))
      const done = await waitForVideo(other.gateway, customer.key, response.body.id)
      assert.strictEqual(done.status, "completed", JSON.stringify(done))
      const files = other.sim.calls().filter((call) => call.path.includes(".mp4"))
      assert.strictEqual(files.length, 1)
      assert.strictEqual(files[0]?.headers["user-agent"], "Tollgate-Fetch/0.1")
    } finally {
      await closeAfterReplay(other)
    }
  }, 60_000)
})
