import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI, { toFile } from "openai"
import { PNG } from "pngjs"
import { drawPng, readImageSize } from "../../../../src/adapters/simulator/images/ImageFiles.ts"
import { Simulator } from "../../../../src/adapters/simulator/Simulator.ts"
import { countText, IMAGE_TOKENS } from "../../../../src/adapters/tokenizer/Tokenizer.ts"

const clientFor = (simulator: Simulator["Service"], apiKey = simulator.apiKey) =>
  new OpenAI({ apiKey, baseURL: `${simulator.baseUrl}/v1`, maxRetries: 0 })

const decode = (b64: string | undefined) => PNG.sync.read(Buffer.from(b64!, "base64"))

const failure = <A>(promise: Promise<A>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error
  )

interface ImagesBody {
  readonly error: {
    readonly message: string
    readonly type: string
    readonly param: string | null
    readonly code: string | null
  }
  readonly size: string
  readonly output_format: string
  readonly data: ReadonlyArray<{ readonly b64_json: string }>
}

const post = (sim: Simulator["Service"], path: string, body: unknown) =>
  fetch(`${sim.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${sim.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as ImagesBody }))

layer(Simulator.layer)("simulator speaks the OpenAI images API", (it) => {
  it.effect("images.generate: n real PNGs of the requested size, usage from the gpt-image-1 table", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const prompt = "a lighthouse at dusk"
      const reply = yield* Effect.promise(() =>
        client.images.generate({ model: "gpt-image-1", prompt, n: 2, size: "1536x1024", quality: "low" })
      )
      assert.strictEqual(reply.data!.length, 2)
      for (const image of reply.data!) {
        const png = decode(image.b64_json)
        assert.strictEqual(png.width, 1536)
        assert.strictEqual(png.height, 1024)
        assert.isUndefined(image.url)
      }
      assert.notStrictEqual(reply.data![0]!.b64_json, reply.data![1]!.b64_json)
      assert.strictEqual(reply.usage!.output_tokens, 2 * 400)
      assert.strictEqual(reply.usage!.input_tokens, countText(prompt))
      assert.strictEqual(reply.usage!.total_tokens, countText(prompt) + 800)
      assert.deepStrictEqual(reply.usage!.input_tokens_details, { text_tokens: countText(prompt), image_tokens: 0 })
      assert.strictEqual(reply.size, "1536x1024")
      assert.strictEqual(reply.quality, "low")
      assert.strictEqual(reply.output_format, "png")
      assert.strictEqual(reply.background, "opaque")
      assert.strictEqual(reply.created, 1_760_000_000)
    })
  )

  it.effect("imggen-2: auto means high at 1024x1024; any WxH in multiples of 16; transparent background", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const auto = yield* Effect.promise(() => client.images.generate({ model: "imggen-2", prompt: "a fox" }))
      assert.strictEqual(auto.size, "1024x1024")
      assert.strictEqual(auto.quality, "high")
      assert.strictEqual(auto.usage!.output_tokens, 7024)
      const again = yield* Effect.promise(() => client.images.generate({ model: "imggen-2", prompt: "a fox" }))
      assert.strictEqual(again.data![0]!.b64_json, auto.data![0]!.b64_json)
      const wide = yield* Effect.promise(() =>
        client.images.generate({
          model: "imggen-2",
          prompt: "a fox",
          size: "640x368" as "1024x1024",
          quality: "medium",
          background: "transparent"
        })
      )
      const png = decode(wide.data![0]!.b64_json)
      assert.deepStrictEqual([png.width, png.height], [640, 368])
      assert.isTrue(png.alpha)
      assert.strictEqual(wide.background, "transparent")
    })
  )

  it.effect("invalid options and unsupported formats are 400s", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const size = yield* Effect.promise(() =>
        post(sim, "/v1/images/generations", { model: "gpt-image-1", prompt: "x", size: "640x368" })
      )
      assert.strictEqual(size.status, 400)
      assert.strictEqual(size.body.error.param, "size")
      const odd = yield* Effect.promise(() =>
        post(sim, "/v1/images/generations", { model: "imggen-2", prompt: "x", size: "1000x1000" })
      )
      assert.strictEqual(odd.status, 400)
      const webp = yield* Effect.promise(() =>
        post(sim, "/v1/images/generations", { model: "imggen-2", prompt: "x", output_format: "webp" })
      )
      assert.strictEqual(webp.status, 400)
      assert.match(webp.body.error.message, /unsupported output_format/)
      // JPEG is encoded for real: the bytes start with the JPEG SOI marker and decode to the requested size.
      const jpeg = yield* Effect.promise(() =>
        post(sim, "/v1/images/generations", {
          model: "imggen-2",
          prompt: "x",
          size: "512x256",
          output_format: "jpeg",
          output_compression: 20
        })
      )
      assert.strictEqual(jpeg.status, 200)
      assert.strictEqual(jpeg.body.output_format, "jpeg")
      const bytes = Buffer.from(jpeg.body.data[0].b64_json, "base64")
      assert.deepStrictEqual([...bytes.subarray(0, 3)], [0xff, 0xd8, 0xff])
      assert.deepStrictEqual(readImageSize(bytes), { width: 512, height: 256 })
      const n = yield* Effect.promise(() =>
        post(sim, "/v1/images/generations", { model: "imggen-2", prompt: "x", n: 11 })
      )
      assert.strictEqual(n.body.error.param, "n")
      const missing = yield* Effect.promise(() => post(sim, "/v1/images/generations", { model: "imggen-2" }))
      assert.strictEqual(missing.body.error.code, "missing_required_parameter")
      const unauthorized = yield* Effect.promise(() =>
        failure(clientFor(sim, "wrong").images.generate({ model: "imggen-2", prompt: "x" }))
      )
      assert.instanceOf(unauthorized, OpenAI.AuthenticationError)
    })
  )

  it.effect("a [sim:moderation] prompt is rejected like the real safety system", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const reply = yield* Effect.promise(() =>
        post(sim, "/v1/images/generations", { model: "imggen-2", prompt: "something bad [sim:moderation]" })
      )
      assert.strictEqual(reply.status, 400)
      assert.deepStrictEqual<unknown>(reply.body, {
        error: {
          message: "Your request was rejected as a result of our safety system.",
          type: "image_generation_user_error",
          code: "moderation_blocked",
          param: null
        }
      })
      const error = yield* Effect.promise(async () =>
        failure(
          clientFor(sim).images.edit({
            model: "imggen-2",
            prompt: "edit it [sim:moderation]",
            image: await toFile(drawPng({ width: 32, height: 32 }, { seed: "m" }), "in.png", { type: "image/png" })
          })
        )
      )
      assert.instanceOf(error, OpenAI.BadRequestError)
      assert.strictEqual((error as InstanceType<typeof OpenAI.BadRequestError>).code, "moderation_blocked")
    })
  )

  it.effect("images.edit with a file (multipart): size auto keeps the input's size; mask must match", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const client = clientFor(sim)
      const input = drawPng({ width: 320, height: 200 }, { seed: "input" })
      const reply = yield* Effect.promise(async () =>
        client.images.edit({
          model: "imggen-2",
          prompt: "add a hat",
          image: await toFile(input, "input.png", { type: "image/png" }),
          quality: "low"
        })
      )
      const png = decode(reply.data![0]!.b64_json)
      assert.deepStrictEqual([png.width, png.height], [320, 200])
      assert.strictEqual(reply.size, "320x200")
      assert.strictEqual(reply.usage!.input_tokens_details.image_tokens, IMAGE_TOKENS)
      assert.strictEqual(reply.usage!.input_tokens, countText("add a hat") + IMAGE_TOKENS)
      assert.isUndefined((yield* sim.calls).at(-1)!.body)

      const several = yield* Effect.promise(async () =>
        client.images.edit({
          model: "gpt-image-1",
          prompt: "combine",
          image: [
            await toFile(drawPng({ width: 200, height: 300 }, { seed: "a" }), "a.png", { type: "image/png" }),
            await toFile(drawPng({ width: 100, height: 100 }, { seed: "b" }), "b.png", { type: "image/png" })
          ],
          n: 2
        })
      )
      assert.strictEqual(several.data!.length, 2)
      assert.strictEqual(several.size, "1024x1536")
      assert.strictEqual(several.usage!.output_tokens, 2 * 6240)
      assert.strictEqual(several.usage!.input_tokens_details.image_tokens, 2 * IMAGE_TOKENS)

      const badMask = yield* Effect.promise(async () =>
        failure(
          client.images.edit({
            model: "imggen-2",
            prompt: "x",
            image: await toFile(input, "input.png", { type: "image/png" }),
            mask: await toFile(drawPng({ width: 10, height: 10 }, { seed: "m" }), "mask.png", { type: "image/png" })
          })
        )
      )
      assert.instanceOf(badMask, OpenAI.BadRequestError)
      assert.match((badMask as Error).message, /mask size does not match/)

      const gif = yield* Effect.promise(async () =>
        failure(
          client.images.edit({
            model: "imggen-2",
            prompt: "x",
            image: await toFile(Buffer.from("GIF89a\x01\x00\x01\x00"), "x.gif", { type: "image/gif" })
          })
        )
      )
      assert.match((gif as Error).message, /unsupported mimetype \('image\/gif'\)/)
    })
  )

  it.effect("images/edits as JSON with data URLs; explicit size wins", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const dataUrl = `data:image/png;base64,${drawPng({ width: 90, height: 160 }, { seed: "j" }).toString("base64")}`
      const auto = yield* Effect.promise(() =>
        post(sim, "/v1/images/edits", { model: "imggen-2", prompt: "p", images: [{ image_url: dataUrl }] })
      )
      assert.strictEqual(auto.status, 200)
      assert.strictEqual(auto.body.size, "90x160")
      const sized = yield* Effect.promise(() =>
        post(sim, "/v1/images/edits", {
          model: "imggen-2",
          prompt: "p",
          size: "1024x1536",
          images: [{ image_url: dataUrl }],
          mask: { image_url: dataUrl }
        })
      )
      const png = decode(sized.body.data[0].b64_json)
      assert.deepStrictEqual([png.width, png.height], [1024, 1536])
      const link = yield* Effect.promise(() =>
        post(sim, "/v1/images/edits", {
          model: "imggen-2",
          prompt: "p",
          images: [{ image_url: "https://x.test/a.png" }]
        })
      )
      assert.strictEqual(link.status, 400)
      const none = yield* Effect.promise(() => post(sim, "/v1/images/edits", { model: "imggen-2", prompt: "p" }))
      assert.strictEqual(none.body.error.param, "image")
    })
  )

  it.effect("fault knobs apply to image routes too", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      yield* sim.setFaults({ status: 503 }, 1)
      const error = yield* Effect.promise(() =>
        failure(clientFor(sim).images.generate({ model: "imggen-2", prompt: "x" }))
      )
      assert.instanceOf(error, OpenAI.InternalServerError)
    })
  )
})
