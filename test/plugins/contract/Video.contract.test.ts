/** The built-in video family against the plugin spec's videos suite: task creation on the simulator's Ark API. */
import { describeVideosPluginContract } from "@tollgate/plugin-spec/contract"
import fc from "fast-check"
import { makeGuardedFetcher } from "../../../src/adapters/fetch/GuardedFetcher.ts"
import { pixelSize, VIDEO_RATIOS, VIDEO_RESOLUTIONS, videoTokens } from "../../../src/domain/video/VideoSpec.ts"
import type { VideoRequest } from "../../../src/plugins/ModelPlugin.ts"
import { makeVideoPlugin } from "../../../src/plugins/video/VideoPlugin.ts"
import { simulatedUpstreams } from "./SimulatedUpstreams.ts"

const { client, upstream, model, refusing } = await simulatedUpstreams()
const plugin = makeVideoPlugin(client, makeGuardedFetcher())
const pricing = { output: 1_400_000n }
const seedance = model("video-model-2.0-fast", upstream("ark"), pricing, "seedance-2-0-fast")

const tokensOf = (request: VideoRequest) => videoTokens(pixelSize(request.resolution, request.ratio), request.seconds)

const request: VideoRequest = {
  prompt: "a paper boat on a pond",
  seconds: 5,
  resolution: "480p",
  ratio: "16:9",
  inputType: "text_to_video",
  images: [],
  videos: []
}
const call = (on: typeof seedance) => ({ model: on, request, taskId: "contract-task", requestId: "contract" })

describeVideosPluginContract("video (built-in, against the simulator)", plugin, {
  models: [seedance],
  inputs: fc.record({
    prompt: fc.string({ minLength: 1 }),
    seconds: fc.integer({ min: 4, max: 15 }),
    resolution: fc.constantFrom(...VIDEO_RESOLUTIONS),
    ratio: fc.constantFrom(...VIDEO_RATIOS),
    inputType: fc.constant("text_to_video" as const),
    images: fc.constant([]),
    videos: fc.constant([])
  }),
  // A finished video never has more tokens than the size and length it was held for.
  usageWithin: (priced) => fc.record({ tokens: fc.bigInt({ min: 0n, max: tokensOf(priced) }), reported: fc.boolean() }),
  usageOf: (held) => ({ tokens: tokensOf(held), reported: false }),
  calls: [{ name: "a 5 s text-to-video task", call: call(seedance), input: request }],
  failing: [
    {
      name: "an upstream that refuses connections",
      reason: "unavailable",
      call: call(model("down", refusing("ark"), pricing))
    }
  ]
})
