import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  DEFAULT_VIDEO_RATIO,
  DEFAULT_VIDEO_RESOLUTION,
  DEFAULT_VIDEO_SECONDS,
  MAX_VIDEO_CLIPS,
  MAX_VIDEO_IMAGES,
  MAX_VIDEO_SECONDS,
  MIN_VIDEO_SECONDS,
  VIDEO_INPUT_TYPES,
  VIDEO_RATIOS,
  VIDEO_RESOLUTIONS,
  type VideoInputType
} from "../../../src/domain/video/VideoSpec.ts"
import {
  inferInputType,
  MAX_VIDEO_PROMPT_CHARS,
  type ValidVideoSubmit,
  type VideoSubmitProblem,
  validateVideoSubmit,
  videoSubmitCodes
} from "../../../src/domain/video/VideoSubmit.ts"

const MODEL = "video-model-2.0-fast"
const base = { model: MODEL, prompt: "a fox in the snow" }

const image = (n: number) => `https://cdn.example.com/frames/${n}.png`
const clip = (n: number) => `https://cdn.example.com/clips/${n}.mp4`
const images = (count: number) => Array.from({ length: count }, (_, index) => image(index))
const clips = (count: number) => Array.from({ length: count }, (_, index) => clip(index))

const valid = (fields: Record<string, unknown>): ValidVideoSubmit => {
  const result = validateVideoSubmit(fields)
  if (result._tag === "Problem") assert.fail(`expected a valid request, got ${result.message}`)
  return result
}

const refused = (fields: Record<string, unknown>, param: string, ...fragments: Array<string>): VideoSubmitProblem => {
  const result = validateVideoSubmit(fields)
  if (result._tag !== "Problem") return assert.fail(`expected a problem with ${param}, got ${JSON.stringify(result)}`)
  assert.strictEqual(result.param, param, result.message)
  assert.isTrue(result.message.startsWith(`${param}: `), result.message)
  for (const fragment of fragments) assert.include(result.message, fragment)
  return result
}

const withMetadata = (metadata: unknown) => ({ ...base, metadata })

describe("validateVideoSubmit", () => {
  describe("defaults", () => {
    it("a prompt and a model make a 5 s 720p 16:9 text-to-video request", () => {
      const result = valid(base)
      assert.strictEqual(result.model, MODEL)
      assert.deepStrictEqual(result.request, {
        prompt: base.prompt,
        seconds: DEFAULT_VIDEO_SECONDS,
        resolution: DEFAULT_VIDEO_RESOLUTION,
        ratio: DEFAULT_VIDEO_RATIO,
        inputType: "text_to_video",
        images: [],
        videos: []
      })
    })

    it("null, and an empty multipart field, mean not given", () => {
      const result = valid({ ...base, seconds: null, metadata: null })
      assert.strictEqual(result.request.seconds, DEFAULT_VIDEO_SECONDS)
      const fromForm = valid({ ...base, seconds: "", metadata: "" })
      assert.strictEqual(fromForm.request.seconds, DEFAULT_VIDEO_SECONDS)
      assert.strictEqual(fromForm.request.resolution, DEFAULT_VIDEO_RESOLUTION)
    })

    it("ignores unknown top-level and metadata fields", () => {
      const result = valid({ ...base, size: "1280x720", user: "u1", metadata: { campaign: "x", ratio: "1:1" } })
      assert.strictEqual(result.request.ratio, "1:1")
    })

    it("returns the model as given: which models exist is checked elsewhere", () => {
      assert.strictEqual(valid({ ...base, model: "no-such-model" }).model, "no-such-model")
    })
  })

  describe("prompt", () => {
    it("is required", () => {
      const problem = refused({ model: MODEL }, "prompt", "required")
      assert.strictEqual(problem.code, videoSubmitCodes.missing)
      refused({ model: MODEL, prompt: null }, "prompt", "required")
    })

    it("must be a non-empty string", () => {
      refused({ ...base, prompt: "" }, "prompt", "must not be empty")
      refused({ ...base, prompt: "   \n" }, "prompt", "must not be empty")
      const problem = refused({ ...base, prompt: 42 }, "prompt", "expected a string, got a number")
      assert.strictEqual(problem.code, videoSubmitCodes.invalidType)
      refused({ ...base, prompt: ["a"] }, "prompt", "got an array")
    })

    it(`is at most ${MAX_VIDEO_PROMPT_CHARS} characters, counted as code points`, () => {
      assert.strictEqual(valid({ ...base, prompt: "a".repeat(MAX_VIDEO_PROMPT_CHARS) }).request.prompt.length, 32000)
      assert.isTrue(valid({ ...base, prompt: "🦊".repeat(MAX_VIDEO_PROMPT_CHARS) })._tag === "Valid")
      const problem = refused(
        { ...base, prompt: "a".repeat(MAX_VIDEO_PROMPT_CHARS + 1) },
        "prompt",
        "at most 32000 characters, got 32001"
      )
      assert.strictEqual(problem.code, videoSubmitCodes.tooLong)
    })
  })

  describe("model", () => {
    it("is required", () => {
      const problem = refused({ prompt: "a fox" }, "model", "required")
      assert.strictEqual(problem.code, videoSubmitCodes.missing)
    })

    it("must be a non-empty string", () => {
      refused({ ...base, model: "" }, "model", "must not be empty")
      refused({ ...base, model: 2 }, "model", "expected a string")
    })
  })

  describe("seconds", () => {
    it("takes an integer as a string (the spec's form) or a JSON integer, 4 to 15", () => {
      assert.strictEqual(valid({ ...base, seconds: "4" }).request.seconds, 4)
      assert.strictEqual(valid({ ...base, seconds: "15" }).request.seconds, 15)
      assert.strictEqual(valid({ ...base, seconds: 8 }).request.seconds, 8)
      assert.strictEqual(valid({ ...base, seconds: "08" }).request.seconds, 8)
    })

    it("refuses fractions, words, and values out of range, naming the range", () => {
      for (const seconds of ["4.5", "abc", "3", "16", "-5", " 5", "5s", 4.5, 3, 16, true, [5], {}]) {
        const problem = refused({ ...base, seconds }, "seconds", "from 4 to 15")
        assert.strictEqual(problem.code, videoSubmitCodes.invalidValue)
      }
      refused({ ...base, seconds: "4.5" }, "seconds", "got '4.5'")
      refused({ ...base, seconds: "99999999999999999999" }, "seconds")
    })
  })

  describe("metadata", () => {
    it("is an object, or a JSON string of one (multipart)", () => {
      const fromJson = valid(withMetadata({ resolution: "1080p", ratio: "9:16" }))
      const fromForm = valid(withMetadata(JSON.stringify({ resolution: "1080p", ratio: "9:16" })))
      assert.deepStrictEqual(fromForm, fromJson)
      assert.strictEqual(fromJson.request.resolution, "1080p")
      assert.strictEqual(fromJson.request.ratio, "9:16")
    })

    it("refuses anything else", () => {
      refused(withMetadata("not json"), "metadata", "expected an object", "not JSON")
      refused(withMetadata("[1,2]"), "metadata", "got JSON an array")
      refused(withMetadata('"x"'), "metadata", "got JSON a string")
      refused(withMetadata("null"), "metadata", "got JSON null")
      refused(withMetadata([]), "metadata", "got an array")
      const problem = refused(withMetadata(7), "metadata", "got a number")
      assert.strictEqual(problem.code, videoSubmitCodes.invalidType)
    })

    it("resolution is one of the offered ones", () => {
      for (const resolution of VIDEO_RESOLUTIONS) {
        assert.strictEqual(valid(withMetadata({ resolution })).request.resolution, resolution)
      }
      const problem = refused(withMetadata({ resolution: "4k" }), "metadata.resolution")
      assert.strictEqual(problem.message, "metadata.resolution: expected one of 480p, 720p, 1080p, got '4k'")
      refused(withMetadata({ resolution: 720 }), "metadata.resolution", "got 720")
    })

    it("ratio is <w>:<h> and an offered one", () => {
      for (const ratio of VIDEO_RATIOS) assert.strictEqual(valid(withMetadata({ ratio })).request.ratio, ratio)
      refused(withMetadata({ ratio: "wide" }), "metadata.ratio", "<w>:<h>", "got 'wide'")
      refused(withMetadata({ ratio: "16/9" }), "metadata.ratio", "<w>:<h>")
      refused(withMetadata({ ratio: "0:1" }), "metadata.ratio", "<w>:<h>")
      refused(withMetadata({ ratio: 1.77 }), "metadata.ratio", "<w>:<h>")
      refused(
        withMetadata({ ratio: "5:4" }),
        "metadata.ratio",
        "5:4 is not an offered ratio",
        "16:9, 9:16, 1:1, 4:3, 3:4, 21:9"
      )
    })
  })

  describe("metadata.images", () => {
    it("takes http(s) links to jpg, jpeg, png and webp, any case, query strings allowed", () => {
      const links = [
        "https://a.example/x.jpg",
        "http://a.example/x.JPEG",
        "https://a.example/dir/x.Png?sig=abc&exp=1",
        "https://a.example:8443/x.webp#frag"
      ]
      assert.deepStrictEqual(valid(withMetadata({ images: links })).request.images, links)
    })

    it("is an array of strings", () => {
      refused(withMetadata({ images: image(0) }), "metadata.images", "expected an array of image URLs, got a string")
      refused(withMetadata({ images: [image(0), 5] }), "metadata.images[1]", "expected a URL string, got a number")
    })

    it(`holds at most ${MAX_VIDEO_IMAGES}`, () => {
      assert.strictEqual(valid(withMetadata({ images: images(MAX_VIDEO_IMAGES) })).request.images.length, 9)
      const problem = refused(withMetadata({ images: images(10) }), "metadata.images", "at most 9 images, got 10")
      assert.strictEqual(problem.code, videoSubmitCodes.tooMany)
    })

    it("refuses inline base64 with the reason, naming the item", () => {
      const problem = refused(
        withMetadata({ images: [image(0), image(1), `data:image/png;base64,${"A".repeat(5000)}`] }),
        "metadata.images[2]",
        "inline base64",
        "not supported for video inputs",
        "publicly reachable URL"
      )
      assert.strictEqual(problem.code, videoSubmitCodes.inlineData)
      assert.isBelow(problem.message.length, 200)
      refused(withMetadata({ images: ["DATA:image/jpeg;base64,AAAA"] }), "metadata.images[0]", "inline base64")
    })

    it("refuses relative, non-http and malformed links, and other formats", () => {
      for (const link of [
        "/x.png",
        "x.png",
        "ftp://a.example/x.png",
        "file:///x.png",
        "https://",
        "http:/a.example/x.png"
      ]) {
        refused(withMetadata({ images: [link] }), "metadata.images[0]", "absolute http(s) URL")
      }
    })

    it("does not judge the format by the path: CDN and API links have no extension (the gateway asks the server)", () => {
      const links = ["https://cdn.example/assets/7f3a9c", "https://a.example/x.png/", "https://a.example/x?f=.png"]
      assert.deepStrictEqual(valid(withMetadata({ images: links })).request.images, links)
    })
  })

  describe("metadata.videos", () => {
    it(`takes up to ${MAX_VIDEO_CLIPS} http(s) MP4 links`, () => {
      const links = ["https://a.example/c.MP4?x=1", clip(1), clip(2)]
      assert.deepStrictEqual(valid(withMetadata({ videos: links })).request.videos, links)
      refused(withMetadata({ videos: clips(4) }), "metadata.videos", "at most 3 videos, got 4")
    })

    it("refuses data URIs and non-arrays; takes links without an extension", () => {
      const links = ["https://api.example/v1/files/abc/content"]
      assert.deepStrictEqual(valid(withMetadata({ videos: links })).request.videos, links)
      refused(withMetadata({ videos: [clip(0), "data:video/mp4;base64,AAAA"] }), "metadata.videos[1]", "inline base64")
      refused(withMetadata({ videos: { 0: clip(0) } }), "metadata.videos", "expected an array of video URLs")
    })
  })

  describe("input type inference (docs/api/videos.md)", () => {
    const rows: ReadonlyArray<readonly [images: number, videos: number, inferred: VideoInputType]> = [
      [0, 0, "text_to_video"],
      [1, 0, "reference"],
      [2, 0, "first_last_frame"],
      [3, 0, "reference"],
      [9, 0, "reference"],
      [0, 1, "reference"],
      [0, 2, "reference"],
      [0, 3, "reference"],
      [1, 1, "reference"],
      [2, 1, "reference"]
    ]
    for (const [imageCount, clipCount, inferred] of rows) {
      it(`${imageCount} images and ${clipCount} videos → ${inferred}`, () => {
        const result = valid(withMetadata({ images: images(imageCount), videos: clips(clipCount) }))
        assert.strictEqual(result.request.inputType, inferred)
        assert.strictEqual(inferInputType(imageCount, clipCount), inferred)
      })
    }

    it("keeps the images in order: the first is the start frame", () => {
      const result = valid(withMetadata({ images: [image(7), image(3)] }))
      assert.deepStrictEqual(result.request.images, [image(7), image(3)])
    })
  })

  describe("explicit metadata.input_type", () => {
    it("is one of the three", () => {
      refused(
        withMetadata({ input_type: "image_to_video" }),
        "metadata.input_type",
        "expected one of text_to_video, first_last_frame, reference, got 'image_to_video'"
      )
    })

    it("may restate what the inputs imply, or ask for reference over first_last_frame", () => {
      assert.strictEqual(valid(withMetadata({ input_type: "text_to_video" })).request.inputType, "text_to_video")
      assert.strictEqual(
        valid(withMetadata({ input_type: "first_last_frame", images: images(2) })).request.inputType,
        "first_last_frame"
      )
      assert.strictEqual(
        valid(withMetadata({ input_type: "reference", images: images(2) })).request.inputType,
        "reference"
      )
      assert.strictEqual(
        valid(withMetadata({ input_type: "reference", videos: clips(1) })).request.inputType,
        "reference"
      )
    })

    it("text_to_video with any image or video is a contradiction", () => {
      const problem = refused(
        withMetadata({ input_type: "text_to_video", images: images(1) }),
        "metadata.input_type",
        "text_to_video takes no images or videos",
        "1 image and 0 videos",
        "implies reference"
      )
      assert.strictEqual(problem.code, videoSubmitCodes.inputTypeMismatch)
      refused(
        withMetadata({ input_type: "text_to_video", videos: clips(1) }),
        "metadata.input_type",
        "implies reference"
      )
    })

    it("first_last_frame needs exactly 2 images and no videos", () => {
      refused(
        withMetadata({ input_type: "first_last_frame", images: images(1) }),
        "metadata.input_type",
        "exactly 2 images",
        "implies reference"
      )
      refused(withMetadata({ input_type: "first_last_frame", images: images(3) }), "metadata.input_type", "3 images")
      refused(withMetadata({ input_type: "first_last_frame" }), "metadata.input_type", "implies text_to_video")
      refused(
        withMetadata({ input_type: "first_last_frame", images: images(2), videos: clips(1) }),
        "metadata.input_type",
        "2 images and 1 video,"
      )
    })

    it("reference needs at least one input", () => {
      refused(
        withMetadata({ input_type: "reference" }),
        "metadata.input_type",
        "reference needs at least one image or video",
        "no images or videos",
        "implies text_to_video"
      )
    })
  })

  describe("multipart, as the openai SDK sends it", () => {
    it("reads string fields: seconds and a JSON metadata string", () => {
      const result = valid({
        model: MODEL,
        prompt: "two frames",
        seconds: "10",
        metadata: JSON.stringify({ resolution: "480p", ratio: "1:1", images: images(2), tag: "mine" })
      })
      assert.deepStrictEqual(result.request, {
        prompt: "two frames",
        seconds: 10,
        resolution: "480p",
        ratio: "1:1",
        inputType: "first_last_frame",
        images: images(2),
        videos: []
      })
    })

    it("names problems inside the JSON string by their metadata path", () => {
      refused(
        { ...base, metadata: JSON.stringify({ videos: ["data:video/mp4;base64,AA"] }) },
        "metadata.videos[0]",
        "inline base64"
      )
    })
  })

  describe("properties", () => {
    it("any record answers a valid request or a problem, never a throw", () => {
      const field = fc.oneof(
        fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true }),
        fc.string(),
        fc.integer({ min: -20, max: 40 }).map(String),
        fc.json()
      )
      const metadataOf = (value: fc.Arbitrary<unknown>) =>
        fc.oneof(
          value,
          fc.dictionary(fc.constantFrom("resolution", "ratio", "images", "videos", "input_type", "other"), value),
          fc.record(
            {
              resolution: fc.oneof(fc.constantFrom(...VIDEO_RESOLUTIONS), value),
              ratio: fc.oneof(fc.constantFrom(...VIDEO_RATIOS, "5:4"), value),
              images: fc.array(fc.oneof(fc.constantFrom(image(1), "data:x", "https://a/b.gif"), value), {
                maxLength: 12
              }),
              videos: fc.array(fc.oneof(fc.constant(clip(1)), value), { maxLength: 5 }),
              input_type: fc.oneof(fc.constantFrom(...VIDEO_INPUT_TYPES), value)
            },
            { requiredKeys: [] }
          )
        )
      // Multipart clients send metadata as JSON text, so that branch draws only JSON-representable values.
      const metadata = fc.oneof(
        metadataOf(field),
        metadataOf(fc.jsonValue()).map((value) => JSON.stringify(value))
      )
      const record = fc.oneof(
        fc.dictionary(fc.string(), field),
        fc.record(
          {
            prompt: fc.oneof(fc.string(), field),
            model: fc.oneof(fc.constant(MODEL), field),
            seconds: field,
            metadata
          },
          { requiredKeys: [] }
        )
      )
      fc.assert(
        fc.property(record, (fields) => {
          const result = validateVideoSubmit(fields)
          if (result._tag === "Problem") {
            assert.isTrue(result.message.startsWith(`${result.param}: `))
            assert.isNotEmpty(result.code)
          } else {
            assert.oneOf(result.request.inputType, [...VIDEO_INPUT_TYPES])
          }
        }),
        { numRuns: 500 }
      )
    })

    it("valid inputs, as JSON or as multipart strings, are accepted and round-trip their fields", () => {
      const link = (extensions: ReadonlyArray<string>) =>
        fc
          .tuple(
            fc.constantFrom("http", "https", "HTTPS"),
            fc.domain(),
            fc.array(fc.webSegment(), { maxLength: 3 }),
            fc.constantFrom(...extensions),
            fc.option(fc.webQueryParameters(), { nil: undefined })
          )
          .map(
            ([scheme, host, dirs, extension, query]) =>
              `${scheme}://${host}/${[...dirs, `f${extension}`].join("/")}${query === undefined ? "" : `?${query}`}`
          )
      const input = fc.record({
        prompt: fc.string({ minLength: 1, maxLength: 200 }).filter((prompt) => prompt.trim() !== ""),
        model: fc.string({ minLength: 1, maxLength: 40 }).filter((model) => model.trim() !== ""),
        seconds: fc.integer({ min: MIN_VIDEO_SECONDS, max: MAX_VIDEO_SECONDS }),
        resolution: fc.constantFrom(...VIDEO_RESOLUTIONS),
        ratio: fc.constantFrom(...VIDEO_RATIOS),
        images: fc.array(link([".jpg", ".jpeg", ".png", ".webp", ".JPG", ".WebP"]), { maxLength: MAX_VIDEO_IMAGES }),
        videos: fc.array(link([".mp4", ".MP4"]), { maxLength: MAX_VIDEO_CLIPS }),
        multipart: fc.boolean(),
        explicit: fc.boolean()
      })
      fc.assert(
        fc.property(input, ({ multipart, explicit, ...request }) => {
          const inferred = inferInputType(request.images.length, request.videos.length)
          const metadata = {
            resolution: request.resolution,
            ratio: request.ratio,
            images: request.images,
            videos: request.videos,
            ...(explicit ? { input_type: inferred } : {})
          }
          const result = validateVideoSubmit({
            model: request.model,
            prompt: request.prompt,
            seconds: multipart ? String(request.seconds) : request.seconds,
            metadata: multipart ? JSON.stringify(metadata) : metadata
          })
          if (result._tag === "Problem") return assert.fail(result.message)
          assert.strictEqual(result.model, request.model)
          assert.deepStrictEqual(result.request, {
            prompt: request.prompt,
            seconds: request.seconds,
            resolution: request.resolution,
            ratio: request.ratio,
            inputType: inferred,
            images: request.images,
            videos: request.videos
          })
        }),
        { numRuns: 300 }
      )
    })
  })
})
