/**
 * The chat families — text on each upstream protocol, the chat-style image family, and the echo example — against
 * the plugin spec's declarative chat suite: it builds each call's IR request and client body from the fixture, and
 * reads the reply's usage in whichever dialect the plugin answers (whole bodies and streams, on all three upstream
 * protocols here). The repository's longer chat suite (pluginContract.ts) adds the dialects' framing.
 */
import { type ChatFixtures, describeChatPluginContract } from "@tollgate/plugin-spec/contract"
import { Effect } from "effect"
import echoPlugin from "../../../examples/plugin-echo/index.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { makeChatImagePlugin } from "../../../src/plugins/chat-image/ChatImagePlugin.ts"
import type { ChatPlugin, PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import { makeTextPlugin } from "../../../src/plugins/text/TextPlugin.ts"
import { simulatedUpstreams } from "./SimulatedUpstreams.ts"

const { client, upstream, model, refusing } = await simulatedUpstreams()

const tokens = { encoding: "o200k_base", count: countText }

const calls: ChatFixtures["calls"] = [
  { name: "one question", prompt: "Tell me about the deep blue sea please", maxTokens: 200 },
  { name: "one question, streamed", prompt: "Tell me about the deep blue sea please", stream: true },
  {
    name: "an Anthropic client with a system prompt",
    prompt: "Hello",
    system: "You repeat things.",
    client: "anthropic"
  },
  { name: "a Gemini client, streamed", prompt: "Hello from the Gemini side", client: "gemini", stream: true },
  { name: "a tight output cap", prompt: "one two three four five six seven eight nine ten", maxTokens: 5 }
]

const describeChat = (name: string, plugin: ChatPlugin, on: PluginModel, down?: PluginModel) =>
  describeChatPluginContract(name, plugin, {
    models: [on],
    calls,
    failing:
      down === undefined
        ? []
        : [{ name: "an upstream that refuses connections", prompt: "hi", model: down, reason: "unavailable" }],
    tokens
  })

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

// The echo plugin calls no upstream: it has no failing case beyond the cancelled call every suite makes. Its reply is
// the last user message, one token per word, so what it must say is known.
describeChatPluginContract("echo (examples/plugin-echo)", echoPlugin, {
  models: [model("echo-1", upstream("openai"), { perCall: 1_000n, output: 2_000_000n })],
  calls: [
    ...calls,
    {
      name: "an echo",
      prompt: "one two three",
      expect: { text: "one two three", usage: { inputTokens: 3, outputTokens: 3 } }
    },
    { name: "an echo, streamed", prompt: "one two three", stream: true, expect: { text: "one two three" } }
  ],
  tokens
})
