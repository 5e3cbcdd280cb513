/**
 * Where alert webhooks and their deliveries are kept, as a port: the account endpoints operators register, and the
 * durable outbox of deliveries (one per event and endpoint) that survives restarts. `app/alerts` decides what to
 * send and when; `adapters/store/PgAlertStore.ts` keeps it.
 */
import { Context, type Effect } from "effect"
import type { Micros } from "../../domain/Money.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"

export interface AlertEndpoint {
  /** `config:…` for the config file's webhooks, else a uuid. */
  readonly id: string
  /** null: the config file's, for every account. */
  readonly accountId: string | null
  readonly url: string
  /** Event types it receives (`*`: all). */
  readonly events: ReadonlyArray<string>
  readonly secret: string
  /** For `balance.low`: alert once the available balance is below this. */
  readonly balanceBelow: Micros | null
  readonly createdAt: Date | null
}

/** One event as endpoints receive it (the webhook's JSON body). */
export interface AlertEvent {
  /** Stable: the same happening noticed twice has the same id, so it is delivered once. */
  readonly id: string
  readonly type: string
  readonly accountId: string | null
  readonly createdAt: string
  readonly data: Readonly<Record<string, unknown>>
}

export type DeliveryStatus = "pending" | "delivered" | "failed"

export interface AlertDelivery {
  readonly id: string
  readonly eventId: string
  readonly eventType: string
  readonly endpoint: string
  readonly accountId: string | null
  readonly url: string
  readonly payload: AlertEvent
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly nextAttemptAt: Date
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly createdAt: Date
  readonly deliveredAt: Date | null
}

/** A delivery leased to one worker for one attempt, with its endpoint's secret when the endpoint is stored. */
export interface LeasedDelivery extends AlertDelivery {
  readonly storedSecret: string | null
}

/** Endpoint changes made by any instance sharing the store, as they commit (see the adapter). */
export interface EndpointChanges {
  /** True while every change is heard: a cache may then keep an account's endpoints until they change. */
  readonly complete: () => boolean
  /** `accountId` undefined: any account's may have changed. */
  readonly subscribe: (listener: (accountId: string | undefined) => void) => void
}

export class AlertStore extends Context.Service<
  AlertStore,
  {
    /** Undefined: changes are not heard, only this instance's own (a cache must re-read soon). */
    readonly changes?: EndpointChanges | undefined
    readonly addEndpoint: (endpoint: AlertEndpoint) => Effect.Effect<void, StoreUnavailable>
    readonly endpointsOf: (accountId: string) => Effect.Effect<ReadonlyArray<AlertEndpoint>, StoreUnavailable>
    /** False when no such endpoint exists. */
    readonly removeEndpoint: (id: string) => Effect.Effect<boolean, StoreUnavailable>
    /** One pending delivery per endpoint, unless that event already has one there; how many were new. */
    readonly enqueue: (
      event: AlertEvent,
      endpoints: ReadonlyArray<{ readonly id: string; readonly url: string }>,
      now: Date
    ) => Effect.Effect<number, StoreUnavailable>
    /**
     * Leases up to `limit` due pending deliveries to `owner` until `until`, counting the attempt: those to stored
     * endpoints, and those to the config webhooks in `configured` (an instance signs only for webhooks it knows).
     */
    readonly leaseDue: (
      owner: string,
      now: Date,
      until: Date,
      limit: number,
      configured: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<LeasedDelivery>, StoreUnavailable>
    /** Records an attempt's outcome for the delivery `owner` leased: delivered, retried at `retryAt`, or failed. */
    readonly finish: (
      owner: string,
      id: string,
      outcome:
        | { readonly _tag: "Delivered"; readonly status: number; readonly at: Date }
        | {
            readonly _tag: "Failed"
            readonly status: number | null
            readonly error: string
            readonly retryAt: Date | null
          }
    ) => Effect.Effect<void, StoreUnavailable>
    readonly deliveries: (query: {
      readonly accountId?: string | undefined
      readonly status?: DeliveryStatus | undefined
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<AlertDelivery>, StoreUnavailable>
    /** Makes a delivery pending and due at `now` again, its attempts counted from zero; false when not found. */
    readonly resend: (id: string, now: Date) => Effect.Effect<boolean, StoreUnavailable>
  }
>()("tollgate/app/ports/AlertStore") {}
