/**
 * What a ledger batch reads before it decides: the accounts it can decide from memory, the rows of the others (heads,
 * account rows, holds, key spend) in one statement, and the states those rows make.
 */
import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { accountStream } from "../../domain/Ids.ts"
import { type AccountState, type HoldState, initialState, type LedgerCommand } from "../../domain/ledger/LedgerState.ts"
import type { Heads } from "./EventAppends.ts"
import type { BatchOutcome } from "../../app/ports/LedgerWriter.ts"
import type { BatchItem, KnownAccount, KnownAccounts } from "./LedgerStore.ts"

/**
 * Whether a command can be decided on what is remembered alone: the same state a read would load. A settle or release
 * needs its hold (and the hold's key spend), a hold on a key needs that key's spend; a deposit needs the references
 * already used, which are not all remembered, so it always reads.
 */
export const knownEnough = (item: BatchItem, known: KnownAccount | undefined): boolean => {
  if (known === undefined || item.companion !== undefined) return false
  const command = item.command
  switch (command.type) {
    case "OpenAccount":
      return true
    case "Deposit":
      return false
    case "PlaceHold":
      return command.keyId === null || known.state.keys.has(command.keyId)
    case "SettleHold":
    case "ReleaseHold": {
      const hold = known.state.holds.get(command.holdId)
      return hold !== undefined && (hold.keyId === null || known.state.keys.has(hold.keyId))
    }
  }
}

/**
 * Whether every command of `items` finds what it needs in `known`, in batch order: a settlement or release of a hold
 * placed earlier in the same batch needs only what that hold needed (the decider sees the hold it just placed).
 */
export const batchKnown = (items: ReadonlyArray<BatchItem>, known: KnownAccounts): boolean => {
  const placed = new Set<string>()
  for (const item of items) {
    const command = item.command
    if (
      (command.type === "SettleHold" || command.type === "ReleaseHold") &&
      item.companion === undefined &&
      placed.has(command.holdId)
    ) {
      continue
    }
    if (!knownEnough(item, known.get(command.accountId))) return false
    if (command.type === "PlaceHold") placed.add(command.holdId)
  }
  return true
}

/** Remembers each account of a committed batch at its new head; resolved holds are not kept. */
export const rememberCommitted = (
  known: KnownAccounts,
  states: ReadonlyMap<string, AccountState>,
  heads: Heads,
  versions: ReadonlyMap<string, bigint>,
  hashes: ReadonlyMap<string, string>
) => {
  for (const [accountId, state] of states) {
    const stream = accountStream(accountId)
    const version = versions.get(stream) ?? heads.get(stream)
    if (version === undefined || !state.exists) continue
    const pending = new Map([...state.holds].filter(([, hold]) => hold.status === "pending"))
    known.remember(accountId, {
      state: { ...state, holds: pending },
      version,
      hash: hashes.get(stream) ?? heads.hashes.get(stream)
    })
  }
}

/** Bigints travel as text inside the aggregated JSON: JSON numbers lose precision above 2^53. Absent = not asked. */
interface Loaded {
  readonly accounts?: ReadonlyArray<{
    id: string
    name: string
    created_at: string
    deposited: string
    captured: string
    held: string
  }> | null
  readonly holds?: ReadonlyArray<{
    hold_id: string
    account_id: string
    key_id: string | null
    amount: string
    status: HoldState["status"]
    captured: string
    refunded: string
    model: string | null
    plugin: string | null
    request_id: string | null
    expires_at: string | null
    placed_at: string
    resolved_at: string | null
  }> | null
  readonly keys?: ReadonlyArray<{ id: string; account_id: string; spent: string; held: string }> | null
  readonly refs?: ReadonlyArray<{ account_id: string; reference: string; amount: string }> | null
  /** Only when the heads are read with the state (optimistic path). */
  readonly heads?: ReadonlyArray<{ stream_name: string; version: string; head_hash: string | null }> | null
}

const iso = (value: string | null): string | null => (value === null ? null : new Date(value).toISOString())

/** Settle and release need the hold; a new hold's id is fresh (and unique in the table), so it needs nothing. */
const heldIdOf = (command: LedgerCommand): string | undefined =>
  command.type === "SettleHold" || command.type === "ReleaseHold" ? command.holdId : undefined

/**
 * Everything the batch's commands need, in ONE statement: the accounts, the holds being resolved, the keys whose spend
 * moves, the deposit references already used, and — when `headNames` is given — the stream heads, read in the same
 * snapshot as the state. In the locked path the heads are locked first and this reads committed state after.
 */
export const loadRows = (
  sql: SqlClient.SqlClient,
  items: ReadonlyArray<BatchItem>,
  headNames?: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const accountIds = [...new Set(items.map((i) => i.command.accountId))]
    const holdIds = [...new Set(items.flatMap((i) => heldIdOf(i.command) ?? []))]
    const keyIds = [
      ...new Set(
        items.flatMap((i) => (i.command.type === "PlaceHold" && i.command.keyId !== null ? [i.command.keyId] : []))
      )
    ]
    const deposits = items.flatMap((i) => (i.command.type === "Deposit" ? [i.command] : []))
    // Only the parts this batch needs: the statement is planned on every execution, and each part costs planning.
    const parts: Array<Statement.Fragment> = [
      sql`(SELECT json_agg(json_build_object('id', a.id, 'name', a.name, 'created_at', a.created_at,
           'deposited', a.deposited::text, 'captured', a.captured::text, 'held', a.held::text))
         FROM accounts a WHERE a.id = ANY(${accountIds}::uuid[])) AS accounts`
    ]
    if (holdIds.length > 0) {
      parts.push(sql`(SELECT json_agg(json_build_object('hold_id', h.hold_id, 'account_id', h.account_id,
           'key_id', h.key_id, 'amount', h.amount::text, 'status', h.status, 'captured', h.captured::text,
           'refunded', h.refunded::text, 'model', h.model, 'plugin', h.plugin, 'request_id', h.request_id,
           'expires_at', h.expires_at, 'placed_at', h.placed_at, 'resolved_at', h.resolved_at))
         FROM holds h WHERE h.hold_id = ANY(${holdIds}::uuid[])) AS holds`)
    }
    const keysOfHolds = sql`SELECT key_id FROM holds WHERE hold_id = ANY(${holdIds}::uuid[])`
    const keyFilter =
      keyIds.length > 0 && holdIds.length > 0
        ? sql`k.id = ANY(${keyIds}::uuid[]) OR k.id IN (${keysOfHolds})`
        : keyIds.length > 0
          ? sql`k.id = ANY(${keyIds}::uuid[])`
          : holdIds.length > 0
            ? sql`k.id IN (${keysOfHolds})`
            : undefined
    if (keyFilter !== undefined) {
      parts.push(sql`(SELECT json_agg(json_build_object('id', k.id, 'account_id', k.account_id,
           'spent', k.spent::text, 'held', k.held::text))
         FROM api_keys k WHERE ${keyFilter}) AS keys`)
    }
    if (deposits.length > 0) {
      parts.push(sql`(SELECT json_agg(json_build_object('account_id', d.account_id, 'reference', d.reference,
           'amount', d.amount::text))
         FROM deposits d JOIN unnest(${deposits.map((d) => d.accountId)}::uuid[], ${deposits.map((d) => d.reference)}::text[])
           AS q(account_id, reference) ON d.account_id = q.account_id AND d.reference = q.reference) AS refs`)
    }
    if (headNames !== undefined) {
      parts.push(sql`(SELECT json_agg(json_build_object('stream_name', s.stream_name, 'version', s.version::text,
           'head_hash', encode(s.head_hash, 'hex')))
         FROM streams s WHERE s.stream_name = ANY(${headNames}::text[])) AS heads`)
    }
    const [loaded] = yield* sql<Loaded>`SELECT ${sql.csv(parts)}`
    return loaded
  })

/** Heads as read in the optimistic path, in the shape `lockHeads` returns (undefined version = no head row yet). */
export const headsOf = (names: ReadonlyArray<string>, rows: Loaded["heads"]): Heads => {
  const heads = new Map<string, bigint | undefined>(names.map((n) => [n, undefined]))
  const hashes = new Map<string, string>()
  for (const row of rows ?? []) {
    heads.set(row.stream_name, BigInt(row.version))
    if (row.head_hash !== null) hashes.set(row.stream_name, row.head_hash)
  }
  return Object.assign(heads, { hashes })
}

/** Each account's state before the batch, from the loaded rows; `exists` comes from the account stream's head. */
export const statesOf = (items: ReadonlyArray<BatchItem>, loaded: Loaded, heads: Heads) => {
  const states = new Map<string, AccountState>()
  for (const item of items) {
    const id = item.command.accountId
    if (!states.has(id)) states.set(id, initialState(id))
  }
  for (const row of loaded.accounts ?? []) {
    const version = heads.get(accountStream(row.id))
    states.set(row.id, {
      ...initialState(row.id),
      exists: version !== undefined && version > 0n,
      name: row.name,
      createdAt: new Date(row.created_at).toISOString(),
      deposited: BigInt(row.deposited),
      captured: BigInt(row.captured),
      held: BigInt(row.held)
    })
  }
  const patch = (accountId: string, change: (state: AccountState) => AccountState) => {
    const state = states.get(accountId)
    if (state !== undefined) states.set(accountId, change(state))
  }
  for (const row of loaded.holds ?? []) {
    const hold: HoldState = {
      holdId: row.hold_id,
      accountId: row.account_id,
      keyId: row.key_id,
      amount: BigInt(row.amount),
      status: row.status,
      captured: BigInt(row.captured),
      refunded: BigInt(row.refunded),
      model: row.model,
      plugin: row.plugin,
      requestId: row.request_id,
      expiresAt: iso(row.expires_at),
      placedAt: new Date(row.placed_at).toISOString(),
      resolvedAt: iso(row.resolved_at)
    }
    patch(row.account_id, (s) => ({ ...s, holds: new Map(s.holds).set(row.hold_id, hold) }))
  }
  for (const row of loaded.keys ?? []) {
    const spend = { spent: BigInt(row.spent), held: BigInt(row.held) }
    patch(row.account_id, (s) => ({ ...s, keys: new Map(s.keys).set(row.id, spend) }))
  }
  for (const row of loaded.refs ?? []) {
    patch(row.account_id, (s) => ({
      ...s,
      depositReferences: new Map(s.depositReferences).set(row.reference, BigInt(row.amount))
    }))
  }
  return states
}

/** The streams a batch appends to (or checks), in name order: the order heads are locked in. */
export const streamsOf = (items: ReadonlyArray<BatchItem>) => {
  const accountIds = [...new Set(items.map((i) => i.command.accountId))].sort()
  const companionStreams = items.flatMap((i) => (i.companion === undefined ? [] : [i.companion.stream]))
  return { accountIds, names: [...new Set([...accountIds.map(accountStream), ...companionStreams])].sort() }
}

export interface Decided {
  readonly decisions: Array<BatchOutcome>
  readonly write: Statement.Statement<unknown> | undefined
  /** The new head of every appended stream, and its last event's hash. */
  readonly versions: ReadonlyMap<string, bigint>
  readonly hashes: ReadonlyMap<string, string>
}
