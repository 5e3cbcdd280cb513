/**
 * Chat-style image models on `/v1/chat/completions` through the official `openai` SDK: the reply's Markdown data-URI
 * images decode to real PNGs, a second turn sends the previous reply back and the upstream receives it as an image,
 * streams deliver each image whole, and billing is one flat price per call — also for a text-only reply — while
 * tools, an unsupported image type and a blocked prompt are refused and cost nothing.
 */
import { closeAfterReplay } from "../chat/ChatHarness.ts"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions"
import {
  assertUnbilled,
  decodePng,
  FLASH_PER_CALL,
  GIF_DATA_URI,
  type ImageHarness,
  lastHold,
  markdownImages,
  PRO_PER_CALL,
  pngDataUri,
  startImageHarness,
  upstreamCalls,
  type Wire
} from "./ImageHarness.ts"

let h: ImageHarness
beforeAll(async () => {
  h = await startImageHarness()
}, 60_000)
afterAll(() => closeAfterReplay(h))

const FLASH = "imgchat-2.5-flash-image"
const PRO = "imgchat-3-pro-image-preview"
const GEMINI_CALL = /:(stream)?[gG]enerateContent/

/** Refusals are released as `rejected`; older gateways said `failed`. */
const REFUSED = ["rejected", "failed"]

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, maxRetries: 0 })

const status = async (promise: Promise<unknown>): Promise<{ status: number; message: string }> => {
  try {
    await promise
  } catch (error) {
    if (error instanceof OpenAI.APIError) return { status: error.status ?? 0, message: error.message }
    throw error
  }
  return assert.fail("expected the request to fail")
}

const upstreamParts = (): ReadonlyArray<{ role: string; parts: ReadonlyArray<Wire> }> => {
  const call = upstreamCalls(h.sim, GEMINI_CALL).at(-1)
  assert.isDefined(call, "the upstream was called")
  return (call as Wire).body.contents
}

describe("chat-style image models on /v1/chat/completions (openai SDK)", () => {
  it("generates a PNG, billed one flat price", async () => {
    const customer = await h.admin.customer()
    const completion = await client(customer.key).chat.completions.create({
      model: FLASH,
      messages: [{ role: "user", content: "Generate an image: a red bicycle" }]
    })
    const content = completion.choices[0]?.message.content ?? ""
    const images = markdownImages(content)
    assert.strictEqual(images.length, 1, content.slice(0, 200))
    assert.strictEqual(images[0]?.mimeType, "image/png")
    const png = decodePng(images[0]?.data ?? "")
    assert.strictEqual(png.width, 1024)
    assert.strictEqual(png.height, 1024)
    assert.isTrue(content.startsWith(content.split("![image]")[0] ?? ""), "caption first")
    assert.strictEqual(completion.model, FLASH)
    assert.isAbove(completion.usage?.completion_tokens ?? 0, 1000, "usage passed through as information")
    const upstream = upstreamCalls(h.sim, GEMINI_CALL).at(-1)?.body as Wire
    assert.deepStrictEqual(upstream.generationConfig.responseModalities, ["TEXT", "IMAGE"])
    const outcome = await lastHold(h.admin, customer, FLASH)
    assert.strictEqual(outcome.held, FLASH_PER_CALL)
    assert.strictEqual(outcome.cost, FLASH_PER_CALL)
    assert.isUndefined(outcome.refund)
  })

  it("keeps several images of one reply as several, on the pro model at its own price", async () => {
    const customer = await h.admin.customer()
    const completion = await client(customer.key).chat.completions.create({
      model: PRO,
      messages: [{ role: "user", content: "Generate an image: three variations of a lighthouse [sim:images=3]" }]
    })
    const images = markdownImages(completion.choices[0]?.message.content ?? "")
    assert.strictEqual(images.length, 3)
    for (const image of images) decodePng(image.data)
    assert.strictEqual((await lastHold(h.admin, customer, PRO)).cost, PRO_PER_CALL)
  })

  it("bills a text-only reply at the flat price (not an error)", async () => {
    const customer = await h.admin.customer()
    const completion = await client(customer.key).chat.completions.create({
      model: FLASH,
      messages: [{ role: "user", content: "Describe a sunset [sim:text-only]" }]
    })
    const content = completion.choices[0]?.message.content ?? ""
    assert.isAbove(content.length, 0)
    assert.strictEqual(markdownImages(content).length, 0)
    const outcome = await lastHold(h.admin, customer, FLASH)
    assert.strictEqual(outcome.cost, FLASH_PER_CALL)
  })

  it("edits over two turns: the previous reply goes back upstream as an image, not as text", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const input = pngDataUri(600, 300)
    const first = await openai.chat.completions.create({
      model: FLASH,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Generate an image: make this banner blue" },
            { type: "image_url", image_url: { url: input } }
          ]
        }
      ]
    })
    const firstContent = first.choices[0]?.message.content ?? ""
    const firstImage = markdownImages(firstContent)[0]
    assert.isDefined(firstImage)
    const firstPng = decodePng(firstImage?.data ?? "")
    assert.strictEqual(firstPng.width / firstPng.height, 2, "the input's aspect ratio is kept")

    const history: Array<ChatCompletionMessageParam> = [
      { role: "user", content: "Generate an image: make this banner blue" },
      { role: "assistant", content: firstContent },
      { role: "user", content: "Generate an image: now add a yellow sun" }
    ]
    const second = await openai.chat.completions.create({ model: FLASH, messages: history })
    const secondImage = markdownImages(second.choices[0]?.message.content ?? "")[0]
    const secondPng = decodePng(secondImage?.data ?? "")
    assert.strictEqual(secondPng.width / secondPng.height, 2, "edited from the previous frame")

    const contents = upstreamParts()
    const model = contents.find((content) => content.role === "model")
    assert.isDefined(model)
    const inline = model?.parts.find((part) => part.inlineData !== undefined)
    assert.strictEqual(inline?.inlineData.mimeType, "image/png")
    assert.strictEqual(inline?.inlineData.data, firstImage?.data, "the image bytes, once")
    for (const part of model?.parts ?? []) {
      assert.notInclude(String(part.text ?? ""), "data:image", "no base64 left in the text")
    }
    const holds = (await lastHold(h.admin, customer, FLASH)).cost
    assert.strictEqual(holds, FLASH_PER_CALL, "each turn is its own call")
  })

  it("streams text deltas and each image whole in one chunk, billed flat", async () => {
    const customer = await h.admin.customer()
    const stream = await client(customer.key).chat.completions.create({
      model: FLASH,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Generate an image: two owls [sim:images=2]" }]
    })
    let text = ""
    const imageChunks: Array<string> = []
    let finish: string | null | undefined
    let usage: unknown
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.content ?? ""
      if (delta.includes("![image](")) imageChunks.push(delta)
      text += delta
      finish = chunk.choices[0]?.finish_reason ?? finish
      if (chunk.usage) usage = chunk.usage
    }
    assert.strictEqual(imageChunks.length, 2, "one chunk per image")
    for (const chunk of imageChunks) {
      const images = markdownImages(chunk)
      assert.strictEqual(images.length, 1)
      decodePng(images[0]?.data ?? "")
    }
    assert.strictEqual(markdownImages(text).length, 2)
    assert.strictEqual(finish, "stop")
    assert.isDefined(usage)
    const outcome = await lastHold(h.admin, customer, FLASH)
    assert.strictEqual(outcome.cost, FLASH_PER_CALL)
  })

  it("streams a second turn that sends the previous reply back", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const first = await openai.chat.completions.create({
      model: FLASH,
      messages: [{ role: "user", content: "Generate an image: a teapot" }]
    })
    const previous = first.choices[0]?.message.content ?? ""
    const stream = await openai.chat.completions.create({
      model: FLASH,
      stream: true,
      messages: [
        { role: "user", content: "Generate an image: a teapot" },
        { role: "assistant", content: previous },
        { role: "user", content: "Generate an image: make it green" }
      ]
    })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    assert.strictEqual(markdownImages(text).length, 1)
    const model = upstreamParts().find((content) => content.role === "model")
    assert.isTrue(model?.parts.some((part) => part.inlineData !== undefined))
  })

  it("carries a multi-megabyte image whole through a stream and back as the next turn's input", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const stream = await openai.chat.completions.create({
      model: FLASH,
      stream: true,
      messages: [{ role: "user", content: "Generate an image: static on a TV [sim:noisy]" }]
    })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    const image = markdownImages(text)[0]
    assert.isAbove(image?.data.length ?? 0, 2_000_000, "several megabytes of base64")
    decodePng(image?.data ?? "")
    const second = await openai.chat.completions.create({
      model: FLASH,
      messages: [
        { role: "user", content: "Generate an image: static on a TV" },
        { role: "assistant", content: text },
        { role: "user", content: "Generate an image: make it calmer" }
      ]
    })
    assert.strictEqual(markdownImages(second.choices[0]?.message.content ?? "").length, 1)
    const sent = upstreamParts().find((content) => content.role === "model")
    assert.strictEqual(sent?.parts.find((part) => part.inlineData)?.inlineData.data, image?.data)
  }, 60_000)

  it("refuses tools with a 400 before anything is held", async () => {
    const customer = await h.admin.customer()
    const failure = await status(
      client(customer.key).chat.completions.create({
        model: FLASH,
        messages: [{ role: "user", content: "Generate an image: a map" }],
        tools: [{ type: "function", function: { name: "search", parameters: { type: "object", properties: {} } } }]
      })
    )
    assert.strictEqual(failure.status, 400)
    assert.match(failure.message, /tools/)
    const entries = await h.admin.ledger(customer.accountId)
    assert.notInclude(
      entries.map((entry) => entry.type),
      "HoldPlaced"
    )
    const balance = await h.admin.balance(customer.accountId)
    assert.strictEqual(balance.captured, "0.000000")
    assert.strictEqual(balance.held, "0.000000")
  })

  it("refuses an input image type other than png/jpeg/webp/heic/heif, naming the mime type", async () => {
    const customer = await h.admin.customer()
    const failure = await status(
      client(customer.key).chat.completions.create({
        model: FLASH,
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Generate an image: animate this" },
              { type: "image_url", image_url: { url: GIF_DATA_URI } }
            ]
          }
        ]
      })
    )
    assert.strictEqual(failure.status, 400)
    assert.include(failure.message, "image/gif")
    assert.include(failure.message, "mime type")
    assert.include(failure.message, "not supported")
    assertUnbilled(await lastHold(h.admin, customer, FLASH), REFUSED)
  })

  it("trusts the bytes over the label: a GIF sent as image/png is refused as image/gif", async () => {
    const customer = await h.admin.customer()
    const failure = await status(
      client(customer.key).chat.completions.create({
        model: FLASH,
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Generate an image: edit" },
              { type: "image_url", image_url: { url: GIF_DATA_URI.replace("image/gif", "image/png") } }
            ]
          }
        ]
      })
    )
    assert.strictEqual(failure.status, 400)
    assert.include(failure.message, "image/gif")
  })

  it("refuses a prompt the upstream's safety filter blocked, unbilled, suggesting a rephrase", async () => {
    const customer = await h.admin.customer()
    const failure = await status(
      client(customer.key).chat.completions.create({
        model: FLASH,
        messages: [{ role: "user", content: "Generate an image: something [sim:blocked]" }]
      })
    )
    assert.strictEqual(failure.status, 400)
    assert.match(failure.message, /rephras/)
    assertUnbilled(await lastHold(h.admin, customer, FLASH), REFUSED)
  })

  it("answers a safety-stopped reply as content_filter, billed like any reply", async () => {
    const customer = await h.admin.customer()
    const completion = await client(customer.key).chat.completions.create({
      model: FLASH,
      messages: [{ role: "user", content: "Generate an image: something [sim:image-safety]" }]
    })
    assert.strictEqual(completion.choices[0]?.finish_reason, "content_filter")
    assert.strictEqual((await lastHold(h.admin, customer, FLASH)).cost, FLASH_PER_CALL)
  })

  it("sends a chat-style image model to /v1/images/generations → 400 naming /v1/chat/completions, no hold", async () => {
    const customer = await h.admin.customer()
    const failure = await status(client(customer.key).images.generate({ model: FLASH, prompt: "a cat" }))
    assert.strictEqual(failure.status, 400)
    assert.include(failure.message, "/v1/chat/completions")
    const entries = await h.admin.ledger(customer.accountId)
    assert.isFalse(entries.some((e) => e.type === "HoldPlaced"))
  })

  it("sends the dedicated image model to /v1/chat/completions → 400 naming /v1/images/generations, unbilled", async () => {
    const customer = await h.admin.customer()
    const failure = await status(
      client(customer.key).chat.completions.create({
        model: "imggen-2",
        messages: [{ role: "user", content: "a cat" }]
      })
    )
    assert.strictEqual(failure.status, 400)
    assert.include(failure.message, "/v1/images/generations")
    const balance = await h.admin.balance(customer.accountId)
    assert.strictEqual(balance.captured, "0.000000")
    assert.strictEqual(balance.held, "0.000000")
  })
})
