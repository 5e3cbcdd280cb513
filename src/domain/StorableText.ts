// Event data lives in Postgres jsonb, which refuses U+0000 and unpaired UTF-16 surrogates (text columns refuse U+0000
// too): text that reaches storage is checked with this at the edge, so a bad character is a 400 naming the field
// rather than a failed transaction.
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Whether `text` can be stored in jsonb as it is. */
export const isStorableText = (text: string): boolean => !text.includes("\u0000") && !UNPAIRED_SURROGATE.test(text)

/** Why `text` cannot be stored (a phrase to follow the field's name), or undefined when it can. */
export const storableTextProblem = (text: string): string | undefined =>
  text.includes("\u0000")
    ? "must not contain a NUL character (U+0000)"
    : UNPAIRED_SURROGATE.test(text)
      ? "must not contain an unpaired UTF-16 surrogate (invalid Unicode text)"
      : undefined

/** `text` made storable: a NUL or an unpaired surrogate becomes U+FFFD (for text no client sent, such as model output). */
export const toStorableText = (text: string): string =>
  text.replace(new RegExp(`${UNPAIRED_SURROGATE.source}|\\u0000`, "g"), "\ufffd")
