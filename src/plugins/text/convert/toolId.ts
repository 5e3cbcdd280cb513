/**
 * Tool-call ids crossing into Anthropic must match `^[a-zA-Z0-9_-]+$`; other vendors issue ids such as
 * `functions.get_weather:0`. The mapping is an injective escape, not a hash, so it is collision-free and reversible:
 * the Anthropic decoder restores the original id, and an OpenAI-compatible upstream gets back the id it issued
 * (Kimi and others validate their own id format on the next turn).
 *
 * - a valid id that does not start with the marker is kept as is;
 * - anything else becomes `gwx_` + the id with every byte outside `[a-zA-Z0-9-]` written as `_xx` (UTF-8, hex).
 */

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/
const MARKER = "gwx_"
const KEPT = /[a-zA-Z0-9-]/
const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: false })

export const sanitizeToolId = (id: string): string => {
  if (ANTHROPIC_ID.test(id) && !id.startsWith(MARKER)) return id
  let out = MARKER
  for (const ch of id) {
    if (KEPT.test(ch)) out += ch
    else for (const byte of encoder.encode(ch)) out += "_" + byte.toString(16).padStart(2, "0")
  }
  return id === "" ? MARKER + "_" : out
}

/** Inverse of `sanitizeToolId`; ids the gateway did not make are returned unchanged. */
export const restoreToolId = (id: string): string => {
  if (!id.startsWith(MARKER) || !ANTHROPIC_ID.test(id)) return id
  const body = id.slice(MARKER.length)
  if (body === "_") return ""
  const bytes: Array<number> = []
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]
    if (ch === "_") {
      const hex = body.slice(i + 1, i + 3)
      if (!/^[0-9a-f]{2}$/.test(hex)) return id
      bytes.push(Number.parseInt(hex, 16))
      i += 2
    } else bytes.push(ch.charCodeAt(0))
  }
  return decoder.decode(new Uint8Array(bytes))
}
