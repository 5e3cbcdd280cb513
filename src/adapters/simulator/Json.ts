/** Small readers for untrusted JSON bodies: vendors accept unknown fields, so the simulator reads only what it needs. */

export type JsonRecord = Readonly<Record<string, unknown>>

export const isRecord = (value: unknown): value is JsonRecord =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const field = (value: unknown, key: string): unknown => (isRecord(value) ? value[key] : undefined)

export const stringField = (value: unknown, key: string): string | undefined => {
  const found = field(value, key)
  return typeof found === "string" ? found : undefined
}

export const numberField = (value: unknown, key: string): number | undefined => {
  const found = field(value, key)
  return typeof found === "number" && Number.isFinite(found) ? found : undefined
}

export const arrayField = (value: unknown, key: string): ReadonlyArray<unknown> | undefined => {
  const found = field(value, key)
  return Array.isArray(found) ? found : undefined
}

/** The text of a content value: a string, or the concatenated `text` of its parts. */
export const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .map((part) => (typeof part === "string" ? part : (stringField(part, "text") ?? "")))
    .filter((text) => text.length > 0)
    .join("\n")
}
