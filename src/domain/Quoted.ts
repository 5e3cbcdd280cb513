/**
 * A client's value as an error message quotes it: cut to at most 100 characters, so that an error never sends a huge
 * bad value (a pasted data URI, a 300 KB model name) back whole. Every message that quotes a client's value goes
 * through here.
 */

/** The most characters of a client's value an error message quotes. */
export const QUOTE_MAX = 100

/** `text`, cut to `QUOTE_MAX` characters and marked `…` when it was longer. */
export const clip = (text: string): string => (text.length <= QUOTE_MAX ? text : `${text.slice(0, QUOTE_MAX)}…`)

/** Any value as JSON (strings in double quotes), clipped. */
export const quoted = (value: unknown): string =>
  clip(typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value)))
