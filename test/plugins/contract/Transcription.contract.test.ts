/** The built-in transcription family against the plugin spec's transcription suite, on the simulator. */
import { describeTranscriptionPluginContract } from "@tollgate/plugin-spec/contract"
import fc from "fast-check"
import { makeTranscriptionPlugin } from "../../../src/plugins/audio/TranscriptionPlugin.ts"
import type { TranscriptionRequest } from "../../../src/plugins/ModelPlugin.ts"
import { wavFile } from "../audio/SimulatorHarness.ts"
import { simulatedUpstreams } from "./SimulatedUpstreams.ts"

const { client, upstream, model, refusing } = await simulatedUpstreams()
const plugin = makeTranscriptionPlugin(client)
const pricing = { perSecond: 100n, input: 2_500_000n, output: 10_000_000n }
const whisper = model("sim-transcribe", upstream("openai"), pricing, "whisper-1")

const request: TranscriptionRequest = {
  file: { data: wavFile(2), filename: "tone.wav", mimeType: "audio/wav" },
  responseFormat: "json",
  timestampGranularities: []
}
// The gateway measures a WAV exactly; the hold is for those 2 s.
const measuredMillis = 2_000
const input = { request, audioMillis: measuredMillis, promptTokens: 0 }
const call = (on: typeof whisper) => ({ model: on, request, measuredMillis, requestId: "contract" })

describeTranscriptionPluginContract("transcription (built-in, against the simulator)", plugin, {
  models: [whisper],
  inputs: fc.record({
    request: fc.constant(request),
    audioMillis: fc.integer({ min: 0, max: 3_600_000 }),
    promptTokens: fc.nat({ max: 1_000 })
  }),
  // What the upstream may report for audio no longer than the hold's: its length, or nothing (then the measure).
  usageWithin: (priced) =>
    fc.integer({ min: 0, max: priced.audioMillis }).chain((measured) =>
      fc.record({
        audioMillis: fc.option(fc.integer({ min: 0, max: measured }), { nil: null }),
        inputTokens: fc.constant(null),
        outputTokens: fc.constant(null),
        measuredMillis: fc.constant(measured)
      })
    ),
  calls: [{ name: "a 2 s tone as json", call: call(whisper), input }],
  failing: [
    {
      name: "an upstream that refuses connections",
      reason: "unavailable",
      call: call(model("down", refusing("openai"), pricing))
    }
  ]
})
