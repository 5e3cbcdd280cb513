/**
 * The dedicated image model (`imggen-2`) on `/v1/images/generations` and `/v1/images/edits` through the official
 * `openai` SDK: real PNGs of the requested size only in `b64_json`, edits from a PNG file (multipart) and from data
 * URIs (JSON), billing from the upstream's `usage.output_tokens` (+ input tokens), low quality several times cheaper
 * than high, and a moderation rejection refused with a hint to rephrase and not billed.
 */
import { closeAfterReplay } from "../chat/ChatHarness.ts"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI, { toFile } from "openai"
import { formatMicros, parseDecimal } from "../../../src/domain/Money.ts"
import {
  assertUnbilled,
  decodePng,
  type ImageHarness,
  IMGGEN_INPUT_PER_M,
  IMGGEN_OUTPUT_PER_M,
  lastHold,
  makePng,
  pngDataUri,
  startImageHarness,
  upstreamCalls
} from "./ImageHarness.ts"

let h: ImageHarness
beforeAll(async () => {
  h = await startImageHarness()
}, 60_000)
afterAll(() => closeAfterReplay(h))

const MODEL = "imggen-2"
const REFUSED = ["rejected"]

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, maxRetries: 0 })

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b

/** What the ledger charges for this usage at imggen-2's prices (each part rounded up to the micro-dollar). */
const priceOf = (usage: { input_tokens: number; output_tokens: number }): string =>
  formatMicros(
    ceilDiv(BigInt(usage.output_tokens) * IMGGEN_OUTPUT_PER_M, 1_000_000n) +
      ceilDiv(BigInt(usage.input_tokens) * IMGGEN_INPUT_PER_M, 1_000_000n)
  )

const failureOf = async (promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> => {
  try {
    await promise
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error
    throw error
  }
  return assert.fail("expected the request to fail")
}

describe("imggen-2 on the images API (openai SDK)", () => {
  it("generates PNGs of the requested size in b64_json only, billed from usage.output_tokens", async () => {
    const customer = await h.admin.customer()
    const result = await client(customer.key).images.generate({
      model: MODEL,
      prompt: "a watercolour fox",
      size: "1536x1024",
      quality: "medium",
      n: 2
    })
    assert.strictEqual(result.data?.length, 2)
    for (const image of result.data ?? []) {
      assert.isUndefined(image.url, "never a link")
      const png = decodePng(image.b64_json ?? "")
      assert.strictEqual(png.width, 1536)
      assert.strictEqual(png.height, 1024)
    }
    const usage = result.usage
    assert.isDefined(usage)
    assert.strictEqual(usage?.output_tokens, 2 * 1372, "gpt-image-2 table: medium 1536x1024")
    assert.strictEqual(usage?.total_tokens, (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0))
    const outcome = await lastHold(h.admin, customer, MODEL)
    assert.strictEqual(outcome.cost, priceOf({ input_tokens: usage?.input_tokens ?? 0, output_tokens: 2 * 1372 }))
    assert.isTrue(
      (parseDecimal(outcome.held) as bigint) >= (parseDecimal(outcome.cost ?? "") as bigint),
      "the hold covers it"
    )
    assert.strictEqual(outcome.usage?.outputTokens, 2 * 1372)
    assert.notProperty(outcome.usage ?? {}, "b64_json", "images are never stored")
  })

  it("charges low quality several times less than high", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const low = await openai.images.generate({
      model: MODEL,
      prompt: "a lighthouse",
      quality: "low",
      size: "1024x1024"
    })
    const lowCost = (await lastHold(h.admin, customer, MODEL)).cost ?? ""
    const high = await openai.images.generate({
      model: MODEL,
      prompt: "a lighthouse",
      quality: "high",
      size: "1024x1024"
    })
    const highCost = (await lastHold(h.admin, customer, MODEL)).cost ?? ""
    assert.strictEqual(low.usage?.output_tokens, 196)
    assert.strictEqual(high.usage?.output_tokens, 7024)
    assert.strictEqual(lowCost, priceOf(low.usage ?? { input_tokens: 0, output_tokens: 0 }))
    assert.strictEqual(highCost, priceOf(high.usage ?? { input_tokens: 0, output_tokens: 0 }))
    const ratio = Number(parseDecimal(highCost)) / Number(parseDecimal(lowCost))
    assert.isAbove(ratio, 5, `high ${highCost} vs low ${lowCost}`)
    decodePng(low.data?.[0]?.b64_json ?? "")
  })

  it("holds auto quality as high at 1024x1024", async () => {
    const customer = await h.admin.customer()
    await client(customer.key).images.generate({ model: MODEL, prompt: "a tree" })
    const outcome = await lastHold(h.admin, customer, MODEL)
    assert.isTrue((parseDecimal(outcome.held) as bigint) >= ceilDiv(7024n * IMGGEN_OUTPUT_PER_M, 1_000_000n))
  })

  it("edits a PNG file sent as multipart, keeping the input's size with size=auto", async () => {
    const customer = await h.admin.customer()
    const file = await toFile(makePng(512, 256), "banner.png", { type: "image/png" })
    const result = await client(customer.key).images.edit({
      model: MODEL,
      image: file,
      prompt: "make it night",
      quality: "low"
    })
    const png = decodePng(result.data?.[0]?.b64_json ?? "")
    assert.strictEqual(png.width, 512)
    assert.strictEqual(png.height, 256)
    assert.isAbove(result.usage?.input_tokens_details?.image_tokens ?? 0, 0, "the input image counted")
    const call = upstreamCalls(h.sim, /\/images\/edits$/).at(-1)
    assert.match(String(call?.headers["content-type"]), /^multipart\/form-data/)
    const outcome = await lastHold(h.admin, customer, MODEL)
    assert.strictEqual(
      outcome.cost,
      priceOf({ input_tokens: result.usage?.input_tokens ?? 0, output_tokens: result.usage?.output_tokens ?? 0 })
    )
    // The default catalog prices output only; an input price the operator configures is still charged.
    assert.notStrictEqual(
      outcome.cost,
      priceOf({ input_tokens: 0, output_tokens: result.usage?.output_tokens ?? 0 }),
      "the configured input price counts"
    )
  })

  it("edits several files (image[]) with a mask", async () => {
    const customer = await h.admin.customer()
    const result = await client(customer.key).images.edit({
      model: MODEL,
      image: [
        await toFile(makePng(256, 256), "a.png", { type: "image/png" }),
        await toFile(makePng(256, 256), "b.png", { type: "image/png" })
      ],
      mask: await toFile(makePng(256, 256), "mask.png", { type: "image/png" }),
      prompt: "combine them",
      size: "1024x1024",
      quality: "low"
    })
    const png = decodePng(result.data?.[0]?.b64_json ?? "")
    assert.strictEqual(png.width, 1024)
    assert.strictEqual(result.usage?.input_tokens_details?.image_tokens, 2 * 765)
  })

  it("edits from a JSON body with a data URI", async () => {
    const customer = await h.admin.customer()
    const response = await fetch(`${h.gateway.url}/v1/images/edits`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        prompt: "add snow",
        quality: "low",
        images: [{ image_url: pngDataUri(320, 640) }]
      })
    })
    const body = await response.json()
    assert.strictEqual(response.status, 200, JSON.stringify(body))
    const png = decodePng(body.data[0].b64_json)
    assert.strictEqual(png.width, 320)
    assert.strictEqual(png.height, 640)
  })

  it("refuses an edit input that is not png/jpeg/webp, naming the type, unbilled", async () => {
    const customer = await h.admin.customer()
    const gif = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64")
    const failure = await failureOf(
      client(customer.key).images.edit({
        model: MODEL,
        image: await toFile(gif, "a.gif", { type: "image/gif" }),
        prompt: "x"
      })
    )
    assert.strictEqual(failure.status, 400)
    assert.include(failure.message, "image/gif")
    assertUnbilled(await lastHold(h.admin, customer, MODEL), REFUSED)
  })

  it("refuses a moderation rejection with a hint to rephrase, unbilled", async () => {
    const customer = await h.admin.customer()
    const failure = await failureOf(
      client(customer.key).images.generate({ model: MODEL, prompt: "something [sim:moderation]" })
    )
    assert.strictEqual(failure.status, 400)
    assert.strictEqual(failure.code, "moderation_blocked")
    assert.match(failure.message, /rephras/)
    assertUnbilled(await lastHold(h.admin, customer, MODEL), REFUSED)
    assert.strictEqual((await h.admin.balance(customer.accountId)).captured, "0.000000")
  })

  it("refuses response_format url: images are only returned as b64_json", async () => {
    const customer = await h.admin.customer()
    const failure = await failureOf(
      client(customer.key).images.generate({ model: MODEL, prompt: "a cat", response_format: "url" })
    )
    assert.strictEqual(failure.status, 400)
    assert.include(failure.message, "b64_json")
  })

  it("answers an unknown model with 404 and a missing key with 401", async () => {
    const customer = await h.admin.customer()
    const missing = await failureOf(client(customer.key).images.generate({ model: "nope-1", prompt: "a cat" }))
    assert.strictEqual(missing.status, 404)
    const anonymous = await fetch(`${h.gateway.url}/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, prompt: "a cat" })
    })
    assert.strictEqual(anonymous.status, 401)
  })

  it("keeps a key's model allow-list", async () => {
    const customer = await h.admin.customer({ models: ["sim-openai"] })
    const failure = await failureOf(client(customer.key).images.generate({ model: MODEL, prompt: "a cat" }))
    assert.strictEqual(failure.status, 403)
  })
})
