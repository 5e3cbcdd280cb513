/** The example third-party plugin against the shared contract, exactly as its author would run it. */
import echoPlugin from "../../../examples/plugin-echo/index.ts"
import type { PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import { chatRequests } from "./fixtures.ts"
import { describePluginContract } from "./pluginContract.ts"

const model: PluginModel = {
  id: "echo-1",
  upstreams: [
    {
      name: "none",
      protocol: "openai",
      baseUrl: "http://127.0.0.1:9/v1",
      timeoutMs: 1_000,
      idleTimeoutMs: 1_000,
      maxConnections: 1
    }
  ],
  upstreamModel: "echo-1",
  pricing: { perCall: 1_000n, output: 2_000_000n },
  maxOutputTokens: 1_000
}

describePluginContract("echo (examples/plugin-echo)", echoPlugin, { models: [model], requests: chatRequests })
