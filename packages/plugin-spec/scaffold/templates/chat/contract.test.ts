/**
 * The plugin against the spec's chat contract suite, with the fake Acme vendor: shape, pricing, calls (whole and
 * streamed, from OpenAI and Anthropic clients), abort, failures. The suite builds each call's chat IR request and
 * client body from the fixture, and reads the reply's text and usage itself.
 */
import type { PluginModel } from "@tollgate/plugin-spec/chat"
import { describeChatPluginContract, fetchUpstreamHttp } from "@tollgate/plugin-spec/contract"
import { afterAll, beforeAll } from "vitest"
import plugin from "./index.ts"
import { startVendor, VENDOR_KEY } from "./vendor.ts"

let vendor: Awaited<ReturnType<typeof startVendor>> | undefined
beforeAll(async () => {
  vendor = await startVendor()
})
afterAll(() => vendor?.close())

const model = (id: string, upstreamModel = id): PluginModel => ({
  id,
  upstreams: [
    {
      name: "acme",
      protocol: "acme-ndjson",
      // As in tollgate.yaml: the key goes in an `x-acme-key` header.
      auth: { scheme: "header", name: "x-acme-key" },
      // The vendor's port is known once it listens.
      get baseUrl() {
        return vendor?.url ?? "http://127.0.0.1:9"
      },
      timeoutMs: 5_000,
      idleTimeoutMs: 5_000,
      maxConnections: 4
    }
  ],
  upstreamModel,
  pricing: { input: 500_000n, output: 1_500_000n },
  maxOutputTokens: 256
})

describeChatPluginContract("acme-chat", plugin, {
  models: [model("acme-1")],
  calls: [
    {
      name: "a question",
      prompt: "say the sea is wide",
      expect: { text: "say the sea is wide", usage: { inputTokens: 5, outputTokens: 5 } }
    },
    {
      name: "a question, streamed",
      prompt: "say the sea is wide",
      system: "repeat after me",
      stream: true,
      expect: { text: "say the sea is wide", usage: { inputTokens: 8, outputTokens: 5 } }
    },
    { name: "a tight output cap", prompt: "one two three four five", maxTokens: 2, expect: { text: "one two" } },
    { name: "an Anthropic client, streamed", prompt: "hello there", client: "anthropic", stream: true }
  ],
  failing: [
    { name: "a prompt the vendor refuses", prompt: "x", model: model("refused", "refuse"), reason: "invalid_request" },
    { name: "a vendor failure", prompt: "x", model: model("broken"), reason: "unavailable" },
    { name: "a stream the vendor cuts", prompt: "x y", stream: true, model: model("cut"), reason: "unavailable" }
  ],
  http: fetchUpstreamHttp({ keys: { acme: VENDOR_KEY } })
})
