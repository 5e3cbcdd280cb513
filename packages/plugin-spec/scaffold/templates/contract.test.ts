/** The plugin against the spec's contract suite, with the fake vendor: shape, pricing, calls, abort, failures. */
import type { PluginModel } from "@tollgate/plugin-spec/endpoint"
import { describeEndpointPluginContract, fetchUpstreamHttp } from "@tollgate/plugin-spec/contract"
import fc from "fast-check"
import { afterAll, beforeAll } from "vitest"
import plugin, { inputTokens, type Request } from "./index.ts"
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
      name: "vendor",
      protocol: "__KIND__-vendor",
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
  pricing: { input: 100_000n },
  maxOutputTokens: 0
})

// A stand-in for the gateway's tokenizer (the gateway passes o200k_base).
const tokens = { encoding: "words", count: (text: string) => text.split(/\s+/).filter((word) => word !== "").length }

describeEndpointPluginContract("__KIND__", plugin, {
  models: [model("__KIND__-1")],
  requests: [
    { name: "one input", body: { model: "__KIND__-1", input: "is this fine" } },
    { name: "three inputs", body: { model: "__KIND__-1", input: ["a", "b c", "d e f"] } }
  ],
  invalidBodies: [{ model: "__KIND__-1" }, { model: "__KIND__-1", input: [] }, { input: "no model" }],
  inputs: fc.record({
    model: fc.constant("__KIND__-1"),
    input: fc.oneof(fc.string({ minLength: 1 }), fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 5 }))
  }) as fc.Arbitrary<Request>,
  usageWithin: (request) => fc.record({ inputTokens: fc.integer({ min: 0, max: inputTokens(request, tokens) }) }),
  failing: [
    {
      name: "a request the vendor refuses",
      model: model("refused", "refuse"),
      body: { model: "refused", input: "x" },
      reason: "invalid_request"
    }
  ],
  http: fetchUpstreamHttp({ keys: { vendor: VENDOR_KEY } }),
  tokens
})
