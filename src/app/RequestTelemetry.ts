/**
 * What one request learns about itself on its way through the layers, for the metrics and the access log: whose key
 * it came with, which model it was for, which upstream answered and how long it waited on upstreams, and what it was
 * charged. The HTTP layer provides a fresh record per request (to the handler and to a streamed body); outside a
 * request the reference's default is a sink nobody reads.
 */
import { Context, Effect } from "effect"
import type { Micros } from "../domain/Money.ts"

export interface RequestTelemetry {
  model: string | undefined
  upstreamSeconds: number
  /** The API key's id (never the key) and its account, once authenticated. */
  keyId: string | undefined
  accountId: string | undefined
  /** The upstream that answered (the last one to, after fallbacks). */
  upstream: string | undefined
  /** What the delivered response was billed: its tokens and cost. */
  charge: { readonly inputTokens: number; readonly outputTokens: number; readonly cost: Micros } | undefined
  /** The account's available balance once the charge committed, as this instance's ledger writer last saw it. */
  balance: Micros | undefined
  /** All the account had deposited then: with `balance`, what a low-balance alert is keyed by. */
  deposited: Micros | undefined
  /** Notes for the client on what was left out of its request (the `x-tollgate-warning` header). */
  readonly warnings: Array<string>
  /** Run once when the response has been sent in full (a stream's end) or the request was abandoned. */
  readonly atEnd: Array<Effect.Effect<void>>
}

export const newTelemetry = (): RequestTelemetry => ({
  model: undefined,
  upstreamSeconds: 0,
  keyId: undefined,
  accountId: undefined,
  upstream: undefined,
  charge: undefined,
  balance: undefined,
  deposited: undefined,
  warnings: [],
  atEnd: []
})

export const CurrentTelemetry = Context.Reference<RequestTelemetry>("tollgate/app/CurrentTelemetry", {
  defaultValue: newTelemetry
})

/**
 * Runs `effect` when the current request's response ends. Outside a request (no telemetry provided) it never runs:
 * callers use it for what must outlive the handler, such as a rate-limit slot held until a stream's last byte.
 */
export const atResponseEnd = (effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    telemetry.atEnd.push(effect)
  })

/** Notes the request's model (the first one named wins: a body's `model`, a multipart field, the Gemini path's). */
export const noteModel = (model: unknown): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    if (telemetry.model === undefined && typeof model === "string" && model.length > 0 && model.length <= 200) {
      telemetry.model = model
    }
  })

/** Adds time spent waiting on `upstream` to the current request's share; an answer names the upstream. */
export const noteUpstream = (upstream: string, seconds: number, answered: boolean): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    telemetry.upstreamSeconds += seconds
    if (answered) telemetry.upstream = upstream
  })

/** The authenticated key of the current request (its id and account, never the secret). */
export const noteKey = (keyId: string, accountId: string): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    telemetry.keyId = keyId
    telemetry.accountId = accountId
  })

/** The account's available balance after the current request's charge. */
export const noteBalance = (balance: Micros, deposited: Micros): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    telemetry.balance = balance
    telemetry.deposited = deposited
  })

/** What the current request's delivered response was billed. */
export const noteCharge = (inputTokens: number, outputTokens: number, cost: Micros): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    telemetry.charge = { inputTokens, outputTokens, cost }
  })
