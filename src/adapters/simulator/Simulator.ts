/**
 * The upstream simulator as an Effect service: a loopback server that speaks the OpenAI, Anthropic and Gemini wire
 * formats, started when the layer is built and closed when its scope ends.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { FaultKnobs } from "./Faults.ts"
import type { RecordedCall, SimulatorOptions } from "./SimulatorServer.ts"

export class SimulatorStartError extends Schema.TaggedError<SimulatorStartError>()("SimulatorStartError", {
  message: Schema.String
}) {}

export class Simulator extends Context.Service<
  Simulator,
  {
    /** Host root, e.g. `http://127.0.0.1:41234`; OpenAI clients use `${baseUrl}/v1`. */
    readonly baseUrl: string
    readonly port: number
    readonly apiKey: string
    /** Replace the instance knobs; with `times`, they apply to the next `times` requests only. */
    readonly setFaults: (knobs: FaultKnobs, times?: number) => Effect.Effect<void>
    readonly clearFaults: Effect.Effect<void>
    /** The requests received so far (up to the last 500). */
    readonly calls: Effect.Effect<ReadonlyArray<RecordedCall>>
    readonly clearCalls: Effect.Effect<void>
  }
>()("tollgate/adapters/simulator/Simulator") {
  /** A simulator with the given options; by default 127.0.0.1 on an ephemeral port with key `sk-sim-test-key`. */
  static readonly layerWith = (options: SimulatorOptions = {}): Layer.Layer<Simulator, SimulatorStartError> =>
    Layer.effect(
      Simulator,
      Effect.gen(function* () {
        const running = yield* Effect.acquireRelease(
          Effect.tryPromise({
            // Loaded when a simulator is started, so a gateway with real upstreams never loads it (nor its encoders).
            try: () => import("./SimulatorServer.ts").then(({ startSimulator }) => startSimulator(options)),
            catch: (cause) => new SimulatorStartError({ message: String(cause) })
          }),
          (server) => Effect.promise(() => server.close())
        )
        const setFaults = (knobs: FaultKnobs, times?: number) => Effect.sync(() => running.setFaults(knobs, times))
        return Simulator.of({
          baseUrl: running.baseUrl,
          port: running.port,
          apiKey: running.apiKey,
          setFaults,
          clearFaults: Effect.sync(() => running.clearFaults()),
          calls: Effect.sync(() => running.calls()),
          clearCalls: Effect.sync(() => running.clearCalls())
        })
      })
    )

  static readonly layer: Layer.Layer<Simulator, SimulatorStartError> = Simulator.layerWith()
}
