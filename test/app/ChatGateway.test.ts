/**
 * The chat pipeline's ordering of hold and upstream call, with the real ledger on each store and a recording plugin.
 * An account this instance last saw funded has its upstream call started while the hold commits; an account it does
 * not know, or knows to be short, is held first and costs no upstream call when the hold is refused; and a hold
 * refused after all (another instance spent the balance meanwhile) aborts the call that was started, charges nothing
 * and leaves no hold.
 */
import { assert, layer } from "@effect/vitest"
import { routingLayer } from "../support/Routing.ts"
import * as PgResponseStore from "../../src/adapters/store/PgResponseStore.ts"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { AuthenticatedKey } from "../../src/app/Keys.ts"
import { ChatGateway } from "../../src/app/ChatGateway.ts"
import { defaultLedgerOptions, Ledger } from "../../src/app/Ledger.ts"
import * as PgLedgerWriter from "../../src/adapters/store/PgLedgerWriter.ts"
import { usd } from "../support/Money.ts"
import type { ChatPlugin, PluginModel } from "../../src/plugins/ModelPlugin.ts"
import { PluginRegistry } from "../../src/app/PluginRegistry.ts"
import { availableStores } from "../support/TestDatabase.ts"
import * as ChatDialectsLive from "../../src/http/dialects/ChatDialectsLive.ts"
import * as TokenCounterLive from "../../src/adapters/tokenizer/TokenCounterLive.ts"

const MODEL: PluginModel = {
  id: "recorded",
  upstreams: [],
  upstreamModel: "recorded",
  pricing: { input: usd("1") },
  maxOutputTokens: 16
}

interface Call {
  readonly requestId: string
  readonly signal: AbortSignal
  /** Whether the request's hold was in the database when the upstream call began. */
  readonly heldAtStart: boolean
}

/**
 * A plugin whose every call is recorded, costs a flat 0.50 (hold and price), and answers once `release` is opened, so
 * a test can look at the ledger while the call is in flight.
 */
const recordingPlugin = (sql: SqlClient.SqlClient, calls: Array<Call>, release: Deferred.Deferred<void>) =>
  ({
    specificationVersion: "v1",
    id: "recorded",
    family: "test",
    kind: "chat",
    pricingKeys: { allowed: ["input"], required: [] },
    pricing: { estimate: () => usd("0.5"), price: () => usd("0.5") },
    countInput: () => 1,
    invoke: (call) =>
      Effect.gen(function* () {
        const rows = yield* sql<{
          n: number
        }>`SELECT count(*)::int AS n FROM holds WHERE request_id = ${call.requestId}`
        calls.push({ requestId: call.requestId, signal: call.signal, heldAtStart: rows[0].n > 0 })
        yield* Deferred.await(release)
        return {
          _tag: "Body",
          dialect: "openai",
          body: {
            id: "chatcmpl-1",
            object: "chat.completion",
            created: 0,
            model: "recorded",
            choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
          }
        } as const
      }).pipe(Effect.orDie)
  }) satisfies ChatPlugin

for (const { target, storeLayer } of availableStores("ChatGateway")) {
  const services = PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 }).pipe(
    Layer.provideMerge(storeLayer)
  )

  layer(services, { timeout: "60 seconds", excludeTestServices: true })(`ChatGateway on ${target.name}`, (it) => {
    /**
     * A gateway on this instance's ledger, its plugin recording into `calls`; its upstream answers once `release` is
     * done (at once when no gate is given).
     */
    const gatewayWith = (calls: Array<Call>, gate?: Deferred.Deferred<void>) =>
      Effect.gen(function* () {
        const release = gate ?? (yield* Deferred.make<void>())
        if (gate === undefined) yield* Deferred.succeed(release, undefined)
        const sql = yield* SqlClient.SqlClient
        const plugin = recordingPlugin(sql, calls, release)
        const registry = PluginRegistry.of({
          lookup: (id) => (id === MODEL.id ? { plugin, model: MODEL } : undefined),
          resolve: (id) => (id === MODEL.id ? { kind: "chat", plugin, model: MODEL } : undefined),
          plugins: new Map([[plugin.id, plugin]]),
          endpoints: []
        })
        const context = yield* Layer.build(
          ChatGateway.layer.pipe(
            Layer.provide(Layer.succeed(PluginRegistry, registry)),
            Layer.provide(ChatDialectsLive.layer),
            Layer.provide(TokenCounterLive.layer),
            Layer.provide(routingLayer()),
            Layer.provide(PgResponseStore.layer)
          )
        )
        return Context.get(context, ChatGateway)
      })

    const customer = (deposit: string) =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const account = yield* ledger.openAccount("chat-order")
        yield* ledger.deposit(account.id, usd(deposit), `d-${account.id}`)
        const key: AuthenticatedKey = {
          keyId: crypto.randomUUID(),
          accountId: account.id,
          models: null,
          spendLimit: null
        }
        return key
      })

    const chat = (gateway: ChatGateway["Service"], key: AuthenticatedKey, requestId: string) =>
      gateway.chat({
        dialect: "openai",
        body: { model: MODEL.id, messages: [{ role: "user", content: "hi" }] },
        key,
        requestId
      })

    const entriesOf = (accountId: string) =>
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ event_type: string }>`
          SELECT event_type FROM events WHERE stream_name = ${`account-${accountId}`} ORDER BY stream_position`
      ).pipe(Effect.map((rows) => rows.map((r) => r.event_type)))

    it.effect("a known, funded account: the upstream call starts before its hold is committed", () =>
      Effect.gen(function* () {
        const calls: Array<Call> = []
        const gateway = yield* gatewayWith(calls)
        const key = yield* customer("10")
        yield* chat(gateway, key, "req-first") // unknown key spend: held first
        yield* chat(gateway, key, "req-second") // now remembered, with room: overlapped
        assert.deepStrictEqual(
          calls.map((c) => [c.requestId, c.heldAtStart]),
          [
            ["req-first", true],
            ["req-second", false]
          ]
        )
        assert.deepStrictEqual(yield* entriesOf(key.accountId), [
          "AccountOpened",
          "FundsDeposited",
          "HoldPlaced",
          "UsageRecalculated",
          "HoldPlaced",
          "UsageRecalculated"
        ])
      }).pipe(Effect.scoped)
    )

    it.effect("an account known to be short is refused before any upstream call", () =>
      Effect.gen(function* () {
        const calls: Array<Call> = []
        const gateway = yield* gatewayWith(calls)
        const key = yield* customer("0.6")
        yield* chat(gateway, key, "req-paid") // 0.50 captured: 0.10 left
        const refused = yield* Effect.flip(chat(gateway, key, "req-refused"))
        assert.strictEqual(refused._tag === "LedgerRejected" && refused.reason, "InsufficientBalance")
        assert.deepStrictEqual(
          calls.map((c) => c.requestId),
          ["req-paid"]
        )
      }).pipe(Effect.scoped)
    )

    it.effect("a hold refused after the call started (another instance spent the balance): aborted, nothing held", () =>
      Effect.gen(function* () {
        const calls: Array<Call> = []
        const release = yield* Deferred.make<void>()
        const gateway = yield* gatewayWith(calls, release)
        const key = yield* customer("2")
        const warm = yield* Effect.forkChild(chat(gateway, key, "req-warm"))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(warm) // 0.50 captured here: this instance remembers 1.50 available
        const other = Context.get(
          yield* Layer.build(PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 })),
          Ledger
        )
        // The other instance holds 1.40: 0.10 is available in truth.
        yield* other.placeHold({
          accountId: key.accountId,
          amount: usd("1.4"),
          keyId: null,
          keySpendLimit: null,
          model: null,
          plugin: null,
          requestId: "req-elsewhere"
        })
        const refused = yield* Effect.flip(chat(gateway, key, "req-late"))
        assert.strictEqual(refused._tag === "LedgerRejected" && refused.reason, "InsufficientBalance")
        const late = calls.find((c) => c.requestId === "req-late")
        assert.isDefined(late, "the call was started alongside the hold")
        assert.isTrue(late?.signal.aborted, "and aborted when the hold was refused")
        const sql = yield* SqlClient.SqlClient
        const holds = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM holds WHERE request_id = 'req-late'`
        assert.strictEqual(holds[0].n, 0)
      }).pipe(Effect.scoped)
    )
  })
}
