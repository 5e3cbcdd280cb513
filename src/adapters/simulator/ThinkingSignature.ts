/**
 * Signatures of simulated thinking blocks. Like the real API, a signature is opaque to clients and binds the exact
 * thinking text, so a gateway that edits, reorders or drops thinking blocks is caught when they come back.
 */
import { createHmac, timingSafeEqual } from "node:crypto"

/** The simulator's fixed signing secret; determinism matters more here than secrecy. */
export const DEFAULT_THINKING_SECRET = "tollgate-simulator-thinking-secret"

export const signThinking = (secret: string, thinking: string): string =>
  createHmac("sha256", secret).update(thinking, "utf8").digest("base64")

export const verifyThinking = (secret: string, thinking: string, signature: string): boolean => {
  const expected = Buffer.from(signThinking(secret, thinking), "utf8")
  const actual = Buffer.from(signature, "utf8")
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}
