/**
 * Signatures are only good with the vendor that issued them: Anthropic answers 400 "Invalid signature in thinking
 * block" to any signature it did not make, and Gemini validates its own `thoughtSignature`s. A client of another dialect
 * still has to carry them (Anthropic clients require a signature on every thinking block; Gemini 3 requires its
 * signature back on the function call it came with), so what the gateway hands out records where it came from:
 *
 * - an Anthropic signature is handed out as is (Anthropic's are base64, never containing `.`);
 * - a Gemini `thoughtSignature` on a thinking block becomes `gw1.gemini.<signature>`;
 * - a thinking block no vendor signed (OpenAI-style reasoning) gets `gw1.<hash>`, a placeholder that proves nothing;
 * - a Gemini signature on a function call rides in the call id, `gts1.<signature>.<id>`, the one field every client
 *   sends back unchanged (on the call and on its result).
 *
 * When the client sends them back, the decoders unwrap them into the IR (the vendor's own signature plus its origin),
 * and each request encoder sends on only its own vendor's signatures: never a foreign one, never an envelope.
 */
import { fnv1a } from "./json.ts"
import type { SignatureOrigin } from "./ChatIR.ts"

export const SYNTHETIC_SIGNATURE_PREFIX = "gw1."
const GEMINI_SIGNATURE_PREFIX = "gw1.gemini."
const TOOL_ID_PREFIX = "gts1."

export const syntheticSignature = (thinking: string): string => SYNTHETIC_SIGNATURE_PREFIX + fnv1a(thinking)

export const signatureOriginOf = (signature: string): SignatureOrigin =>
  signature.startsWith(GEMINI_SIGNATURE_PREFIX)
    ? "gemini"
    : signature.startsWith(SYNTHETIC_SIGNATURE_PREFIX)
      ? "synthetic"
      : "anthropic"

/** A thinking signature as a client sent it → the vendor's own signature and its origin. */
export const readSignature = (raw: string): { readonly signature: string; readonly origin: SignatureOrigin } => {
  const origin = signatureOriginOf(raw)
  return { signature: origin === "gemini" ? raw.slice(GEMINI_SIGNATURE_PREFIX.length) : raw, origin }
}

/** The signature a client is handed for a thinking block (see `readSignature` for the way back). */
export const clientSignature = (signature: string, origin: SignatureOrigin | undefined): string =>
  origin === "gemini" ? GEMINI_SIGNATURE_PREFIX + signature : signature

/** A tool-call id as a client sees it: the Gemini signature of the call, if any, packed in front. */
export const packToolId = (id: string, signature: string | undefined): string =>
  signature === undefined || signature === "" ? id : `${TOOL_ID_PREFIX}${signature}.${id}`

/** Inverse of `packToolId`; ids the gateway did not pack come back unchanged, without a signature. */
export const unpackToolId = (raw: string): { readonly id: string; readonly signature?: string } => {
  if (!raw.startsWith(TOOL_ID_PREFIX)) return { id: raw }
  const dot = raw.indexOf(".", TOOL_ID_PREFIX.length)
  if (dot < 0) return { id: raw }
  const signature = raw.slice(TOOL_ID_PREFIX.length, dot)
  return signature === "" ? { id: raw } : { id: raw.slice(dot + 1), signature }
}
