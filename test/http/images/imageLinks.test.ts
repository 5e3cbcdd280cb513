/**
 * Input images given as links are fetched by the gateway through the guarded fetcher: a loopback address is refused
 * (unbilled) unless the operator allow-lists it, a redirect into a private address is refused at that hop, and an
 * allowed link is fetched, type-checked from its bytes and sent upstream inline.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import OpenAI from "openai"
import {
  assertUnbilled,
  decodePng,
  FLASH_PER_CALL,
  type ImageHarness,
  lastHold,
  makePng,
  markdownImages,
  startImageHarness,
  upstreamCalls,
  type Wire
} from "./ImageHarness.ts"

const FLASH = "imgchat-2.5-flash-image"
const REFUSED = ["rejected", "failed"]

let open: ImageHarness
let guarded: ImageHarness
let images: Server
let base = ""

beforeAll(async () => {
  images = createServer((request, response) => {
    if (request.url === "/banner.png") {
      response.writeHead(200, { "content-type": "image/png" })
      response.end(makePng(400, 200))
    } else if (request.url === "/to-private") {
      response.writeHead(302, { location: "http://10.0.0.1/secret.png" })
      response.end()
    } else if (request.url === "/anim.gif") {
      response.writeHead(200, { "content-type": "image/gif" })
      response.end(Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64"))
    } else {
      response.writeHead(404)
      response.end()
    }
  })
  await new Promise<void>((resolve) => images.listen(0, "127.0.0.1", resolve))
  const address = images.address()
  base = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  open = await startImageHarness({ allowHosts: ["127.0.0.1"] })
  guarded = await startImageHarness()
}, 60_000)

afterAll(async () => {
  await open?.close()
  await guarded?.close()
  await new Promise((resolve) => images?.close(resolve))
})

const ask = (h: ImageHarness, key: string, url: string) =>
  new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, maxRetries: 0 }).chat.completions.create({
    model: FLASH,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "Generate an image: make it look like a poster" },
          { type: "image_url", image_url: { url } }
        ]
      }
    ]
  })

const failure = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    if (error instanceof OpenAI.APIError) return { status: error.status, message: error.message }
    throw error
  }
  return assert.fail("expected the request to fail")
}

describe("input image links (guarded fetcher)", () => {
  it("fetches an allowed link and sends it upstream inline, keeping its aspect ratio", async () => {
    const customer = await open.admin.customer()
    const completion = await ask(open, customer.key, `${base}/banner.png`)
    const image = markdownImages(completion.choices[0]?.message.content ?? "")[0]
    const png = decodePng(image?.data ?? "")
    assert.strictEqual(png.width / png.height, 2)
    const upstream = upstreamCalls(open.sim, /:generateContent$/).at(-1)?.body as Wire
    const inline = upstream.contents[0].parts.find((part: Wire) => part.inlineData)
    assert.strictEqual(inline.inlineData.mimeType, "image/png")
    assert.strictEqual(inline.inlineData.data, makePng(400, 200).toString("base64"))
    assert.strictEqual((await lastHold(open.admin, customer, FLASH)).cost, FLASH_PER_CALL)
  })

  it("refuses a loopback link without the allow-list, unbilled", async () => {
    const customer = await guarded.admin.customer()
    const refused = await failure(ask(guarded, customer.key, `${base}/banner.png`))
    assert.strictEqual(refused.status, 400)
    assert.match(refused.message, /loopback/)
    assertUnbilled(await lastHold(guarded.admin, customer, FLASH), REFUSED)
  })

  it("refuses a redirect into a private address", async () => {
    const customer = await open.admin.customer()
    const refused = await failure(ask(open, customer.key, `${base}/to-private`))
    assert.strictEqual(refused.status, 400)
    assert.match(refused.message, /private/)
  })

  it("refuses a fetched GIF, naming its type", async () => {
    const customer = await open.admin.customer()
    const refused = await failure(ask(open, customer.key, `${base}/anim.gif`))
    assert.strictEqual(refused.status, 400)
    assert.include(refused.message, "image/gif")
  })
})
