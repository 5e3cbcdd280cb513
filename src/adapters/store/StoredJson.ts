/**
 * JSON in and out of jsonb columns for text no client check covered (model output): a NUL or an unpaired surrogate,
 * which jsonb refuses, becomes U+FFFD on the way in; a column comes back parsed (Postgres) or as text (some drivers).
 */
import { isStorableText, toStorableText } from "../../domain/StorableText.ts"

/** JSON text of `value` that jsonb accepts. */
export const storableJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" && !isStorableText(v) ? toStorableText(v) : v))

export const parsed = <A>(value: A | string): A => (typeof value === "string" ? (JSON.parse(value) as A) : value)
