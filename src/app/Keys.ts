/** API keys: creation (shown once), listing without secrets, revocation, and authentication of a presented key. */
import { Context, type Effect, Schema } from "effect"
import type { RateLimits } from "../domain/keys/RateLimits.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import type { StoreUnavailable } from "./StoreErrors.ts"

export interface KeyView {
  readonly id: string
  readonly name: string
  readonly accountId: string
  readonly prefix: string
  readonly createdAt: string
  readonly lastUsedAt: string | null
  readonly expiresAt: string | null
  readonly models: ReadonlyArray<string> | null
  readonly spendLimit: bigint | null
  /** The key's own limits; null figures fall back to the operator's defaults. */
  readonly rateLimits: RateLimits
  readonly spent: bigint
  readonly held: bigint
  readonly revokedAt: string | null
}

export interface CreateKeyInput {
  readonly name: string
  readonly models: ReadonlyArray<string> | null
  readonly expiresAt: string | null
  readonly spendLimit: bigint | null
  /** Omitted → none of its own (the operator's defaults apply). */
  readonly rateLimits?: RateLimits | undefined
}

/** The identity a request acts as once its key is accepted. */
export interface AuthenticatedKey {
  readonly keyId: string
  readonly accountId: string
  readonly models: ReadonlyArray<string> | null
  readonly spendLimit: bigint | null
  /** Omitted (requests made for tests and internal callers) → the operator's defaults. */
  readonly rateLimits?: RateLimits | undefined
}

export class KeyNotFound extends Schema.TaggedError<KeyNotFound>()("KeyNotFound", { keyId: Schema.String }) {}

/** Why a presented key was refused. The message never repeats the key. */
export class KeyRejected extends Schema.TaggedError<KeyRejected>()("KeyRejected", {
  reason: Schema.Literals(["missing", "malformed", "unknown", "revoked", "expired"])
}) {}

export class Keys extends Context.Service<
  Keys,
  {
    readonly create: (
      accountId: string,
      input: CreateKeyInput
    ) => Effect.Effect<KeyView & { readonly key: string }, LedgerRejected | StoreUnavailable>
    readonly list: (accountId: string) => Effect.Effect<ReadonlyArray<KeyView>, LedgerRejected | StoreUnavailable>
    readonly revoke: (keyId: string) => Effect.Effect<KeyView, KeyNotFound | StoreUnavailable>
    readonly authenticate: (
      secret: string | undefined
    ) => Effect.Effect<AuthenticatedKey, KeyRejected | StoreUnavailable>
  }
>()("tollgate/app/Keys") {}
