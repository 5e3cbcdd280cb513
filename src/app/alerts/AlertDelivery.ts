/**
 * The alert delivery worker, one per instance: it leases due deliveries from the outbox (no other instance sends a
 * leased row), POSTs each through the guarded fetcher (a webhook URL is the operator's or a customer's, so it gets
 * the same address rule as any URL the gateway did not choose), signed with its endpoint's secret, and records the
 * outcome: a 2xx delivers it for good; anything else is tried again with backoff (AlertSignature.ts) until the
 * attempts run out. A worker that dies mid-send leaves a lease that expires, and the row is sent again: receivers
 * deduplicate by `x-tollgate-event-id`.
 */
import { Clock, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { GuardedFetcher } from "../ports/GuardedFetcher.ts"
import { AlertStore, type LeasedDelivery } from "../ports/AlertStore.ts"
import { Alerts } from "./Alerts.ts"
import { retryDelayMs, SIGNATURE_HEADER, signatureOf } from "./AlertSignature.ts"

export interface AlertDeliveryOptions {
  /** Attempts before a delivery is marked failed (default 10: about 14 hours of backoff). */
  readonly maxAttempts: number
  /** How long one attempt may take, connection and answer (default 10 s). */
  readonly timeoutMs: number
  /** How long a leased row is this worker's before another may take it (default 60 s). */
  readonly leaseMs: number
  /** Deliveries leased per round (default 20), sent 4 at a time. */
  readonly batch: number
}

export const defaultAlertDeliveryOptions: AlertDeliveryOptions = {
  maxAttempts: 10,
  timeoutMs: 10_000,
  leaseMs: 60_000,
  batch: 20
}

export const layerWith = (options: AlertDeliveryOptions = defaultAlertDeliveryOptions) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const alerts = yield* Alerts
      const store = yield* AlertStore
      const fetcher = yield* GuardedFetcher
      const owner = `alerts-${randomUUID()}`
      const configured = [...alerts.configured.keys()]

      const secretOf = (delivery: LeasedDelivery) =>
        delivery.storedSecret ?? alerts.configured.get(delivery.endpoint)?.secret

      const deliver = (delivery: LeasedDelivery) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const secret = secretOf(delivery)
          if (secret === undefined) {
            return yield* store.finish(owner, delivery.id, {
              _tag: "Failed",
              status: null,
              error: "the endpoint no longer exists (removed, or gone from the config file)",
              retryAt: null
            })
          }
          const body = JSON.stringify(delivery.payload)
          const timestamp = Math.floor(now / 1000)
          const sent = yield* Effect.result(
            fetcher.post(delivery.url, {
              headers: {
                "content-type": "application/json",
                "x-tollgate-event-id": delivery.eventId,
                "x-tollgate-event-type": delivery.eventType,
                "x-tollgate-delivery-id": delivery.id,
                [SIGNATURE_HEADER]: signatureOf(secret, timestamp, body)
              },
              body,
              timeoutMs: options.timeoutMs
            })
          )
          const at = yield* Clock.currentTimeMillis
          if (sent._tag === "Success" && sent.success.status >= 200 && sent.success.status < 300) {
            return yield* store.finish(owner, delivery.id, {
              _tag: "Delivered",
              status: sent.success.status,
              at: new Date(at)
            })
          }
          const delay = retryDelayMs(delivery.attempts, options.maxAttempts)
          const error =
            sent._tag === "Success" ? `the endpoint answered HTTP ${sent.success.status}` : sent.failure.detail
          yield* Effect.logWarning("alert delivery failed").pipe(
            Effect.annotateLogs({
              delivery: delivery.id,
              event: delivery.eventType,
              attempts: delivery.attempts,
              error,
              retry: delay === null ? "no more" : `in ${delay} ms`
            })
          )
          yield* store.finish(owner, delivery.id, {
            _tag: "Failed",
            status: sent._tag === "Success" ? sent.success.status : null,
            error,
            retryAt: delay === null ? null : new Date(at + delay)
          })
        })

      const round = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const due = yield* store.leaseDue(
          owner,
          new Date(now),
          new Date(now + options.leaseMs),
          options.batch,
          configured
        )
        yield* Effect.forEach(due, deliver, { concurrency: 4, discard: true })
        return due.length
      }).pipe(
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning("alert deliveries could not be read; trying again shortly").pipe(
              Effect.annotateLogs({ error: error.message })
            ),
            0
          )
        )
      )

      yield* Effect.gen(function* () {
        for (;;) {
          const sent = yield* round
          // A full batch means more may be due: go on at once; otherwise wait for a new alert or a second.
          if (sent < options.batch) yield* alerts.woken
        }
      }).pipe(Effect.forkScoped)
    })
  )
