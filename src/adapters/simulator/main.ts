/**
 * Runs the simulator standalone: `tsx src/adapters/simulator/main.ts --port 9100 [--host 127.0.0.1]
 * [--api-key KEY | SIM_API_KEY=KEY] [--reply-tokens 24] [--latency MS] [--chunk-delay MS] [--models a,b] [--batch-ms MS]` (a vendor batch's time to its results).
 * Reading argv is this entry point's edge.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Option } from "effect"
import { parseArgs } from "node:util"
import { Simulator } from "./Simulator.ts"

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "9100" },
    host: { type: "string", default: "127.0.0.1" },
    "api-key": { type: "string" },
    "reply-tokens": { type: "string" },
    latency: { type: "string" },
    "chunk-delay": { type: "string" },
    models: { type: "string" },
    "batch-ms": { type: "string" }
  }
})

const optionalNumber = (value: string | undefined): number | undefined =>
  value === undefined ? undefined : Number(value)

// `--api-key` wins over SIM_API_KEY; without either the simulator uses its default test key.
const SimulatorLive = Layer.unwrap(
  Effect.gen(function* () {
    const envKey = yield* Config.option(Config.String("SIM_API_KEY"))
    return Simulator.layerWith({
      port: Number(values.port),
      host: values.host,
      apiKey: values["api-key"] ?? Option.getOrUndefined(envKey),
      replyTokens: optionalNumber(values["reply-tokens"]),
      models: values.models?.split(",").map((model) => model.trim()),
      batchMillis: optionalNumber(values["batch-ms"]),
      faults: { latencyMs: optionalNumber(values.latency), chunkDelayMs: optionalNumber(values["chunk-delay"]) }
    })
  })
)

const Announce = Layer.effectDiscard(
  Effect.gen(function* () {
    const simulator = yield* Simulator
    yield* Effect.log(`upstream simulator on ${simulator.baseUrl} (api key ${simulator.apiKey})`)
  })
)

Layer.launch(Announce.pipe(Layer.provide(SimulatorLive))).pipe(NodeRuntime.runMain)
