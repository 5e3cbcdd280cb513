/** The rerank plugin against the plugin spec's contract suite for new kinds, as its author runs it: one call. */
import { describeEndpointPluginContract, fetchUpstreamHttp } from "@tollgate/plugin-spec/contract"
import type { PluginModel, UpstreamConfig } from "@tollgate/plugin-spec/endpoint"
import fc from "fast-check"
import { afterAll, beforeAll } from "vitest"
import rerankPlugin, { MAX_DOCUMENTS, type RerankRequest, searchUnits } from "./index.ts"
import { type RerankSimulator, startRerankSimulator } from "./simulator.ts"

let simulator: RerankSimulator | undefined
beforeAll(async () => {
  simulator = await startRerankSimulator()
})
afterAll(() => simulator?.close())

// The simulator's port is known only once it listens: the upstream reads it then.
const upstream: UpstreamConfig = {
  name: "rerank-sim",
  protocol: "openai",
  get baseUrl() {
    return simulator?.url ?? "http://127.0.0.1:9/v1"
  },
  timeoutMs: 5_000,
  idleTimeoutMs: 5_000,
  maxConnections: 4
}

const model = (id: string, upstreamModel = id): PluginModel => ({
  id,
  upstreams: [upstream],
  upstreamModel,
  pricing: { perSearchUnit: 2_000n },
  maxOutputTokens: 0
})

const requests: fc.Arbitrary<RerankRequest> = fc.record({
  model: fc.constant("rerank-1"),
  query: fc.string({ minLength: 1 }),
  documents: fc.array(fc.oneof(fc.string(), fc.record({ text: fc.string({ maxLength: 5_000 }) })), {
    minLength: 1,
    maxLength: MAX_DOCUMENTS
  })
})

describeEndpointPluginContract("examples/plugin-rerank", rerankPlugin, {
  models: [model("rerank-1")],
  requests: [
    { name: "three documents", body: { model: "rerank-1", query: "deep sea", documents: ["sea", "deep sea", "car"] } },
    {
      name: "150 documents with top_n and objects",
      body: {
        model: "rerank-1",
        query: "seven",
        documents: Array.from({ length: 150 }, (_, i) => ({ text: `document ${i}` })),
        top_n: 3,
        return_documents: true
      }
    }
  ],
  invalidBodies: [
    { model: "rerank-1", documents: ["a"] },
    { model: "rerank-1", query: "q", documents: [] },
    { model: "rerank-1", query: "q", documents: ["a"], top_n: 0 },
    { query: "q", documents: ["a"] }
  ],
  inputs: requests,
  // The gateway adds an upstream's key by its name; so does the suite's HTTP capability.
  http: fetchUpstreamHttp({ keys: { "rerank-sim": "sim-rerank-key" } }),
  usageWithin: (request) =>
    fc.record({
      searchUnits: fc.integer({ min: 0, max: searchUnits(request) }),
      documents: fc.constant(request.documents.length)
    }),
  failing: [
    {
      name: "a model its upstream refuses",
      reason: "invalid_request",
      model: model("refused", "rerank-refuse"),
      body: { model: "refused", query: "q", documents: ["a"] }
    },
    {
      name: "a busy upstream",
      reason: "overloaded",
      model: model("busy", "rerank-busy"),
      body: { model: "busy", query: "q", documents: ["a"] }
    }
  ]
})
