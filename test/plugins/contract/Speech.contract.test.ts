/** The built-in speech family against the plugin spec's speech suite, on the simulator. */
import { describeSpeechPluginContract } from "@tollgate/plugin-spec/contract"
import fc from "fast-check"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { makeSpeechPlugin, speechCharacters } from "../../../src/plugins/audio/SpeechPlugin.ts"
import type { SpeechRequest } from "../../../src/plugins/ModelPlugin.ts"
import { simulatedUpstreams } from "./SimulatedUpstreams.ts"

const { client, upstream, model, refusing } = await simulatedUpstreams()
const plugin = makeSpeechPlugin(client)
const pricing = { perMillionCharacters: 15_000_000n, output: 12_000_000n }
const tts = model("sim-tts", upstream("openai"), pricing)

const request: SpeechRequest = { input: "Hello from the contract suite.", voice: "alloy", responseFormat: "mp3" }
const input = { request, inputTokens: countText(request.input) }
const usageOf = (text: string, inputTokens: number) => ({ characters: speechCharacters(text), inputTokens })

describeSpeechPluginContract("speech (built-in, against the simulator)", plugin, {
  models: [tts],
  inputs: fc.record({
    request: fc.record({
      input: fc.string({ minLength: 1, maxLength: 4_096 }),
      voice: fc.constant("alloy"),
      responseFormat: fc.constantFrom("mp3" as const, "wav" as const)
    }),
    inputTokens: fc.nat({ max: 10_000 })
  }),
  // Speech is priced from its input alone: what is charged is what was held.
  usageWithin: (priced) => fc.constant(usageOf(priced.request.input, priced.inputTokens)),
  usageOf: (call) => usageOf(call.request.input, countText(call.request.input)),
  calls: [{ name: "a sentence as mp3", call: { model: tts, request, requestId: "contract" }, input }],
  failing: [
    {
      name: "an upstream that refuses connections",
      reason: "unavailable",
      call: { model: model("down", refusing("openai"), pricing), request, requestId: "contract" }
    }
  ]
})
