// Event data lives in Postgres jsonb, which refuses U+0000 and unpaired UTF-16 surrogates: text that reaches an event
// is checked with this at the edge, so a bad character is a 400 naming the field rather than a failed transaction.
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Whether `text` can be stored in jsonb as it is. */
export const isStorableText = (text: string): boolean => !text.includes("\u0000") && !UNPAIRED_SURROGATE.test(text)
