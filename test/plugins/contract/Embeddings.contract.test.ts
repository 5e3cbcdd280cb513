/** The built-in embeddings family against the plugin spec's embeddings suite, on the simulator (OpenAI and Gemini). */
import { describeEmbeddingsPluginContract } from "@tollgate/plugin-spec/contract"
import fc from "fast-check"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { makeEmbeddingsPlugin } from "../../../src/plugins/embeddings/EmbeddingsPlugin.ts"
import type { EmbeddingsRequest } from "../../../src/plugins/ModelPlugin.ts"
import { simulatedUpstreams } from "./SimulatedUpstreams.ts"

const { client, upstream, model, refusing } = await simulatedUpstreams()
const plugin = makeEmbeddingsPlugin(client)
const pricing = { input: 20_000n }
const openai = model("sim-embedding", upstream("openai"), pricing)
const gemini = model("sim-embedding-gemini", upstream("gemini"), pricing)

const request: EmbeddingsRequest = {
  inputs: [
    { _tag: "Text", text: "the deep blue sea" },
    { _tag: "Text", text: "a red car" }
  ]
}
const inputTokens = request.inputs.reduce((sum, input) => sum + (input._tag === "Text" ? countText(input.text) : 0), 0)
const call = (on: typeof openai) => ({ model: on, request, inputTokens, requestId: "contract" })

describeEmbeddingsPluginContract("embeddings (built-in, against the simulator)", plugin, {
  models: [openai, gemini],
  inputs: fc.record({
    request: fc.record({
      inputs: fc.array(fc.record({ _tag: fc.constant("Text" as const), text: fc.string({ minLength: 1 }) }), {
        minLength: 1,
        maxLength: 8
      })
    }),
    inputTokens: fc.nat({ max: 1_000_000 })
  }),
  usageWithin: (input) => fc.record({ promptTokens: fc.integer({ min: 0, max: input.inputTokens }) }),
  calls: [
    { name: "two texts on an OpenAI upstream", call: call(openai), input: { request, inputTokens } },
    { name: "two texts on a Gemini upstream", call: call(gemini), input: { request, inputTokens } }
  ],
  failing: [
    {
      name: "an upstream that refuses connections",
      reason: "unavailable",
      call: call(model("down", refusing("openai"), pricing))
    }
  ]
})
