/**
 * The hold command a call's hold becomes, and the cheap guess of whether it would pass: pure functions of the input,
 * the clock and (for the guess) the account as this instance last committed it.
 */
import { randomUUID } from "node:crypto"
import { decide } from "../domain/ledger/LedgerAccount.ts"
import type { AccountState, LedgerCommand } from "../domain/ledger/LedgerState.ts"

export type PlaceHoldCommand = Extract<LedgerCommand, { readonly type: "PlaceHold" }>

/**
 * What a caller asks for: the command's own fields, less those the ledger fills in (the id unless given, the expiry
 * from a TTL, the time).
 */
export interface PlaceHoldInput extends Omit<PlaceHoldCommand, "type" | "holdId" | "expiresAt" | "at"> {
  readonly holdId?: string
  /** Overrides the default hold TTL; `null` = no expiry (a video task's deadline governs it). */
  readonly ttlSeconds?: number | null
}

/** The PlaceHold command of `input` placed at `nowMs`, expiring after its own TTL or `defaultTtlSeconds`. */
export const holdCommand = (input: PlaceHoldInput, nowMs: number, defaultTtlSeconds: number) => {
  const ttl = input.ttlSeconds === undefined ? defaultTtlSeconds : input.ttlSeconds
  const expiresAt = ttl === null ? null : new Date(nowMs + ttl * 1000).toISOString()
  const command: PlaceHoldCommand = {
    type: "PlaceHold",
    accountId: input.accountId,
    holdId: input.holdId ?? randomUUID(),
    amount: input.amount,
    keyId: input.keyId,
    keySpendLimit: input.keySpendLimit,
    model: input.model,
    plugin: input.plugin,
    requestId: input.requestId,
    expiresAt,
    at: new Date(nowMs).toISOString()
  }
  return { command, metadata: { requestId: input.requestId, keyId: input.keyId }, holdId: command.holdId, expiresAt }
}

/** The hold id of `likelyAccepted`'s probe (all zeros: `randomUUID` never makes it). */
const PROBE_HOLD_ID = "00000000-0000-0000-0000-000000000000"

/**
 * Whether `state` (the account as this instance last committed it) has room for twice the hold: balance and the key's
 * spend limit. False when the account or the key is not known there.
 */
export const likelyAccepted = (
  state: AccountState | undefined,
  input: PlaceHoldInput,
  nowMs: number,
  defaultTtlSeconds: number
): boolean => {
  if (state === undefined) return false
  if (input.keyId !== null && !state.keys.has(input.keyId)) return false
  // A fixed id that no real hold has: the probe is decided, never written, and needs no fresh uuid.
  const probe = holdCommand({ ...input, amount: input.amount * 2n, holdId: PROBE_HOLD_ID }, nowMs, defaultTtlSeconds)
  return decide(state, probe.command)._tag === "Accepted"
}
