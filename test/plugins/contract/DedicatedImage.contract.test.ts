/** The built-in dedicated image family against the plugin spec's images suite, on the simulator. */
import { describeImagesPluginContract } from "@tollgate/plugin-spec/contract"
import { Effect } from "effect"
import fc from "fast-check"
import { makeDedicatedImagePlugin } from "../../../src/plugins/dedicated-image/DedicatedImagePlugin.ts"
import { imageTokensForHold, INPUT_IMAGE_TOKENS } from "../../../src/plugins/dedicated-image/ImageTokens.ts"
import type { ImageRequest, ImagesPricingInput } from "../../../src/plugins/ModelPlugin.ts"
import { simulatedUpstreams } from "./SimulatedUpstreams.ts"

const { client, upstream, model, refusing } = await simulatedUpstreams()
const plugin = makeDedicatedImagePlugin(client, () => Effect.die("no image links in these fixtures"))
const pricing = { input: 5_000_000n, output: 40_000_000n }
const imggen = model("imggen-2", upstream("openai"), pricing)

const request: ImageRequest = { prompt: "a lighthouse at dusk", n: 1, size: "1024x1024", quality: "low", images: [] }
const input: ImagesPricingInput = { operation: "generate", request, promptTokens: 5 }

/** The most output and input tokens the hold for `priced` covers. */
const bounds = (priced: ImagesPricingInput) => ({
  output: priced.request.n * imageTokensForHold(priced.request.size, priced.request.quality),
  input: priced.promptTokens + (priced.operation === "edit" ? priced.request.images.length * INPUT_IMAGE_TOKENS : 0)
})

describeImagesPluginContract("dedicated-image (built-in, against the simulator)", plugin, {
  models: [imggen],
  inputs: fc.record({
    operation: fc.constant("generate" as const),
    request: fc.record({
      prompt: fc.string({ minLength: 1 }),
      n: fc.integer({ min: 1, max: 4 }),
      size: fc.constantFrom("1024x1024", "1024x1536", "1536x1024", "auto", undefined),
      quality: fc.constantFrom("low", "medium", "high", "auto", undefined),
      images: fc.constant([])
    }),
    promptTokens: fc.nat({ max: 10_000 })
  }),
  usageWithin: (priced) => {
    const { output, input: inputBound } = bounds(priced)
    return fc.record({
      outputTokens: fc.integer({ min: 0, max: output }),
      inputTokens: fc.integer({ min: 0, max: inputBound }),
      inputTextTokens: fc.nat({ max: inputBound }),
      inputImageTokens: fc.constant(0),
      estimated: fc.boolean()
    })
  },
  calls: [
    {
      name: "one low-quality square",
      call: { model: imggen, operation: "generate", request, requestId: "contract" },
      input
    }
  ],
  failing: [
    {
      name: "an upstream that refuses connections",
      reason: "unavailable",
      call: { model: model("down", refusing("openai"), pricing), operation: "generate", request, requestId: "contract" }
    }
  ]
})
