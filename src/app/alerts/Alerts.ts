/**
 * Alerts: webhooks told when something an operator or a customer must act on happens, namely:
 * - `balance.low`: an account's available balance fell below an endpoint's threshold;
 * - `key.spend_limit_reached`: a key reached its spend limit;
 * - `deployment.disabled`: an upstream refused the gateway's credentials;
 * - `video.failed`: a video task failed;
 * - `batch.completed`, `batch.failed`, `batch.expired`, `batch.cancelled`: a batch ended (app/batch/BatchEndedAlert.ts).
 *
 * `raise` writes one outbox row per endpoint that wants the event (the config file's, and the account's own) in
 * Postgres, keyed by a stable event id, so an event noticed twice (two instances, a retry, a restart) is queued
 * once. The delivery worker (AlertDelivery.ts) sends them, signed, through the guarded fetcher, retrying with
 * backoff. Raising never fails the caller: an alert that cannot be queued is logged, and the request goes on.
 */
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { formatMicros, type Micros } from "../../domain/Money.ts"
import { type AlertEventType, subscribes } from "../config/decodeAlerts.ts"
import { OperatorConfig } from "../OperatorConfig.ts"
import { type AlertDelivery, type AlertEndpoint, AlertStore, type DeliveryStatus } from "../ports/AlertStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"

export interface RaisedEvent {
  /** What makes two noticings the same event (the event id is derived from it). */
  readonly key: string
  readonly type: AlertEventType
  /** The account it is about; null for the operator's own events (then only the config's webhooks get it). */
  readonly accountId: string | null
  readonly data: Readonly<Record<string, unknown>>
}

export interface NewEndpoint {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly secret: string
  readonly balanceBelow: Micros | null
}

/** An endpoint as the admin API shows it: never its secret. */
export type EndpointView = Omit<AlertEndpoint, "secret">

/**
 * How long an account's endpoints are trusted from memory before they are read again: while the store tells of every
 * change as it commits (`AlertStore.changes`), only as a backstop for a listening connection that died silently;
 * otherwise briefly, which bounds how late another instance's change is seen here.
 */
const ENDPOINT_CACHE_MS = 5_000
const HEARD_ENDPOINT_CACHE_MS = 60_000
/** How often the delivery worker looks for due rows nobody woke it for. */
const IDLE_DELIVERY_POLL_MS = 5_000
/** Events this process already queued, so a balance seen low on every call is not queued again each time. */
const MAX_REMEMBERED = 50_000

export const eventIdOf = (key: string): string => `evt_${createHash("sha256").update(key).digest("hex").slice(0, 32)}`

export class Alerts extends Context.Service<
  Alerts,
  {
    readonly raise: (event: RaisedEvent) => Effect.Effect<void>
    /** After an account's balance moved down: `balance.low` to each endpoint whose threshold it is now below. */
    readonly balanceSeen: (accountId: string, available: Micros, deposited: Micros) => Effect.Effect<void>
    readonly addEndpoint: (accountId: string, endpoint: NewEndpoint) => Effect.Effect<EndpointView, StoreUnavailable>
    readonly endpointsOf: (accountId: string) => Effect.Effect<ReadonlyArray<EndpointView>, StoreUnavailable>
    readonly removeEndpoint: (id: string) => Effect.Effect<boolean, StoreUnavailable>
    readonly deliveries: (query: {
      readonly accountId?: string | undefined
      readonly status?: DeliveryStatus | undefined
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<AlertDelivery>, StoreUnavailable>
    readonly resend: (id: string) => Effect.Effect<boolean, StoreUnavailable>
    /** Wakes this instance's delivery worker (a new row is due now). */
    readonly woken: Effect.Effect<void>
    /** The config file's webhooks, with their secrets, by endpoint id. */
    readonly configured: ReadonlyMap<string, AlertEndpoint>
  }
>()("tollgate/app/alerts/Alerts") {
  static readonly layer = Layer.effect(
    Alerts,
    Effect.gen(function* () {
      const store = yield* AlertStore
      const config = yield* OperatorConfig
      const configured = new Map<string, AlertEndpoint>()
      ;(config.alerts ?? []).forEach((webhook, index) => {
        const id = `config:${index}:${createHash("sha256").update(webhook.url).digest("hex").slice(0, 12)}`
        configured.set(id, {
          id,
          accountId: null,
          url: webhook.url,
          events: webhook.events,
          secret: Redacted.value(webhook.secret),
          balanceBelow: webhook.balanceBelow,
          createdAt: null
        })
      })
      const cache = new Map<string, { readonly endpoints: ReadonlyArray<AlertEndpoint>; readonly at: number }>()
      const remembered = new Set<string>()
      let wake: () => void = () => undefined
      // Rows queued here wake the worker at once; what else comes due — a retry (5 s after a first failure at the
      // soonest), another instance's rows left behind — is looked for every IDLE_DELIVERY_POLL_MS.
      const woken = Effect.callback<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), IDLE_DELIVERY_POLL_MS)
        wake = () => {
          clearTimeout(timer)
          resume(Effect.void)
        }
        return Effect.sync(() => clearTimeout(timer))
      })

      // Bumped by every forgetting: a read that began before one is not kept (it may predate the change).
      let generation = 0
      const forget = (accountId: string | undefined) => {
        generation++
        if (accountId === undefined) cache.clear()
        else cache.delete(accountId)
      }
      store.changes?.subscribe(forget)
      const accountEndpoints = (accountId: string) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const cached = cache.get(accountId)
          const ttl = store.changes?.complete() === true ? HEARD_ENDPOINT_CACHE_MS : ENDPOINT_CACHE_MS
          if (cached !== undefined && now - cached.at < ttl && now >= cached.at) return cached.endpoints
          const since = generation
          const endpoints = yield* store.endpointsOf(accountId)
          if (since === generation) cache.set(accountId, { endpoints, at: now })
          return endpoints
        })

      const queue = (event: RaisedEvent, to: ReadonlyArray<AlertEndpoint>) =>
        Effect.gen(function* () {
          if (to.length === 0) return
          const now = new Date(yield* Clock.currentTimeMillis)
          const payload = {
            id: eventIdOf(event.key),
            type: event.type,
            accountId: event.accountId,
            createdAt: now.toISOString(),
            data: event.data
          }
          const queued = yield* store.enqueue(
            payload,
            to.map((endpoint) => ({ id: endpoint.id, url: endpoint.url })),
            now
          )
          if (queued > 0) wake()
        })

      const raise = (event: RaisedEvent) =>
        Effect.gen(function* () {
          if (remembered.has(event.key)) return
          const own = event.accountId === null ? [] : yield* accountEndpoints(event.accountId)
          const to = [...configured.values(), ...own].filter((endpoint) => subscribes(endpoint.events, event.type))
          yield* queue(event, to)
          remember(event.key)
        }).pipe(
          Effect.catch((error) =>
            Effect.logError("an alert could not be queued").pipe(
              Effect.annotateLogs({ event: event.type, error: error.message })
            )
          )
        )

      const remember = (key: string) => {
        if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.values().next().value as string)
        remembered.add(key)
      }

      const balanceSeen = (accountId: string, available: Micros, deposited: Micros) =>
        Effect.gen(function* () {
          const own = yield* accountEndpoints(accountId)
          for (const endpoint of [...configured.values(), ...own]) {
            const threshold = endpoint.balanceBelow
            if (threshold === null || available >= threshold || !subscribes(endpoint.events, "balance.low")) continue
            // Once per endpoint and funding level: a deposit (a new total) arms it again.
            const key = `balance.low:${accountId}:${endpoint.id}:${deposited}`
            if (remembered.has(key)) continue
            yield* queue(
              {
                key,
                type: "balance.low",
                accountId,
                data: { accountId, available: formatMicros(available), threshold: formatMicros(threshold) }
              },
              [endpoint]
            )
            remember(key)
          }
        }).pipe(
          Effect.catch((error) =>
            Effect.logError("a low-balance alert could not be queued").pipe(
              Effect.annotateLogs({ error: error.message })
            )
          )
        )

      const view = ({ secret: _secret, ...endpoint }: AlertEndpoint): EndpointView => endpoint

      return Alerts.of({
        raise,
        balanceSeen,
        addEndpoint: (accountId, endpoint) =>
          Effect.gen(function* () {
            const created: AlertEndpoint = {
              id: randomUUID(),
              accountId,
              ...endpoint,
              createdAt: new Date(yield* Clock.currentTimeMillis)
            }
            yield* store.addEndpoint(created)
            forget(accountId)
            return view(created)
          }),
        endpointsOf: (accountId) => Effect.map(store.endpointsOf(accountId), (endpoints) => endpoints.map(view)),
        removeEndpoint: (id) => Effect.tap(store.removeEndpoint(id), () => Effect.sync(() => forget(undefined))),
        deliveries: (query) => store.deliveries(query),
        resend: (id) =>
          Effect.gen(function* () {
            const found = yield* store.resend(id, new Date(yield* Clock.currentTimeMillis))
            if (found) wake()
            return found
          }),
        woken: Effect.suspend(() => woken),
        configured
      })
    })
  )
}
