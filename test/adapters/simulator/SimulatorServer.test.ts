import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"

describe("startSimulator", () => {
  it.effect("honours its options: key, model list, reply length; records calls; closes", () =>
    Effect.gen(function* () {
      const sim = yield* Effect.promise(() =>
        startSimulator({ apiKey: "custom-key", models: ["only-model"], replyTokens: 7 })
      )
      assert.match(sim.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/)
      const client = new OpenAI({ apiKey: "custom-key", baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
      const reply = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "only-model", messages: [{ role: "user", content: "hi" }] })
      )
      assert.strictEqual(reply.usage!.completion_tokens, 7)
      const missing = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "other", messages: [{ role: "user", content: "hi" }] }).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      assert.instanceOf(missing, OpenAI.NotFoundError)
      assert.deepStrictEqual(
        sim.calls().map((call) => call.path),
        ["/v1/chat/completions", "/v1/chat/completions"]
      )
      const health = yield* Effect.promise(() => fetch(`${sim.baseUrl}/health`).then((r) => r.json()))
      assert.deepStrictEqual(health, { ok: true })
      yield* Effect.promise(() => sim.close())
      const refused = yield* Effect.promise(() =>
        fetch(`${sim.baseUrl}/health`).then(
          () => undefined,
          (e: unknown) => e
        )
      )
      assert.instanceOf(refused, Error)
    })
  )

  it.effect("the layer closes the server when its scope ends, even with a stalled stream open", () =>
    Effect.gen(function* () {
      const baseUrl = yield* Effect.scoped(
        Effect.gen(function* () {
          const sim = yield* Simulator
          yield* Effect.promise(() =>
            fetch(`${sim.baseUrl}/v1/chat/completions`, {
              method: "POST",
              headers: { authorization: `Bearer ${sim.apiKey}`, "x-sim-fault": "stall=1" },
              body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "x" }] })
            })
          )
          return sim.baseUrl
        }).pipe(Effect.provide(Simulator.layer))
      )
      const refused = yield* Effect.promise(() =>
        fetch(`${baseUrl}/health`).then(
          () => undefined,
          (e: unknown) => e
        )
      )
      assert.instanceOf(refused, Error)
    })
  )
})
