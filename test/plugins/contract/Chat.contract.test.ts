/**
 * The chat families — text on each upstream protocol, the chat-style image family, and the echo example — against
 * the plugin spec's chat suite. A chat reply's usage is read with the gateway's own converters (a plugin author reads
 * their one dialect). The repository's longer chat suite (pluginContract.ts) adds streams and the dialects' framing.
 */
import { describeChatPluginContract } from "@tollgate/plugin-spec/contract"
import { Effect, Result } from "effect"
import fc from "fast-check"
import echoPlugin from "../../../examples/plugin-echo/index.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { makeChatImagePlugin } from "../../../src/plugins/chat-image/ChatImagePlugin.ts"
import {
  type ChatPlugin,
  type ChatPricingInput,
  type ChatReply,
  type PluginModel,
  pluginFailure,
  type Usage
} from "../../../src/plugins/ModelPlugin.ts"
import { makeTextPlugin } from "../../../src/plugins/text/TextPlugin.ts"
import { chatRequests } from "./fixtures.ts"
import { chatCall, outputCap, responseToIR } from "./pluginContract.ts"
import { simulatedUpstreams } from "./SimulatedUpstreams.ts"

const { client, upstream, model, refusing } = await simulatedUpstreams()

/** The usage a whole reply reports, read in its own dialect. */
const usageOf =
  (on: PluginModel) =>
  (reply: ChatReply): Effect.Effect<Usage, ReturnType<typeof pluginFailure>> => {
    if (reply._tag !== "Body") return Effect.fail(pluginFailure("unavailable", "these fixtures ask for whole replies"))
    const ir = responseToIR(reply.dialect, reply.body, on)
    return Result.isSuccess(ir)
      ? Effect.succeed(ir.success.usage)
      : Effect.fail(pluginFailure("unavailable", "a reply the gateway cannot read"))
  }

/** Any request of the fixtures, with any output cap, and any input count. */
const inputs = (on: PluginModel): fc.Arbitrary<ChatPricingInput> =>
  fc.record({
    request: fc
      .tuple(fc.constantFrom(...chatRequests), fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }))
      .map(([fixture, maxTokens]) => {
        const request = chatCall(fixture, on, false).request
        return maxTokens === undefined ? request : { ...request, maxTokens }
      }),
    inputTokens: fc.nat({ max: 1_000_000 })
  })

/** Usage inside what the hold covers: input up to the count, output up to the cap (reasoning and cache within them). */
const usageWithin = (input: ChatPricingInput, on: PluginModel): fc.Arbitrary<Usage> =>
  fc.record({
    inputTokens: fc.integer({ min: 0, max: input.inputTokens }),
    outputTokens: fc.integer({ min: 0, max: outputCap(input.request, on) }),
    cacheReadTokens: fc.constant(0),
    cacheWriteTokens: fc.constant(0),
    reasoningTokens: fc.constant(0)
  })

/** The first fixture on `on`, without its signal (the suite gives each run its own). */
const callOn = (on: PluginModel) => {
  const { signal: _, ...call } = chatCall(chatRequests[0] as (typeof chatRequests)[number], on, false)
  return call
}

const describeChat = (name: string, plugin: ChatPlugin, on: PluginModel, down?: PluginModel) => {
  const calls = chatRequests.map((fixture) => {
    const { signal: _, ...call } = chatCall(fixture, on, false)
    const inputTokens = countText(JSON.stringify(call.client.body))
    return { name: fixture.name, call, input: { request: call.request, inputTokens } }
  })
  const failing =
    down === undefined
      ? []
      : [{ name: "an upstream that refuses connections", reason: "unavailable" as const, call: callOn(down) }]
  describeChatPluginContract(name, plugin, {
    models: [on],
    inputs: inputs(on),
    usageWithin,
    usageOf: usageOf(on),
    calls,
    failing
  })
}

const text = makeTextPlugin(client)
const textPricing = { input: 150_000n, output: 600_000n }
for (const protocol of ["openai", "anthropic", "gemini"] as const) {
  describeChat(
    `text on ${protocol} (built-in, against the simulator)`,
    text,
    model(`sim-${protocol}`, upstream(protocol), textPricing),
    model("down", refusing(protocol), textPricing)
  )
}

const imagePricing = { perCall: 39_000n }
describeChat(
  "chat-image (built-in, against the simulator)",
  makeChatImagePlugin(client, () => Effect.die("no image links in these fixtures")),
  model("imgchat-2.5-flash-image", upstream("gemini"), imagePricing),
  model("down", refusing("gemini"), imagePricing)
)

const echoPricing = { perCall: 1_000n, output: 2_000_000n }
describeChat(
  "echo (examples/plugin-echo)",
  echoPlugin,
  // The echo plugin calls no upstream: it has no failing case beyond the cancelled call every suite makes.
  model("echo-1", upstream("openai"), echoPricing)
)
