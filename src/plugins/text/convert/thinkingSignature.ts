/**
 * Signatures are only good with the vendor that issued them: Anthropic answers 400 "Invalid signature in thinking
 * block" to any signature it did not make, and Gemini validates its own `thoughtSignature`s. A client of another dialect
 * still has to carry them (Anthropic clients require a signature on every thinking block; Gemini 3 requires its
 * signature back on the function call it came with), so what the gateway hands out records where it came from:
 *
 * - an Anthropic signature is handed out as is (Anthropic's are base64, never containing `.`);
 * - a Gemini `thoughtSignature` on a thinking block becomes `gw1.gemini.<signature>`;
 * - a Responses API reasoning item's `encrypted_content` (OpenAI's) becomes `gw1.openai.<content>`;
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
const OPENAI_SIGNATURE_PREFIX = "gw1.openai."
const TOOL_ID_PREFIX = "gts1."

export const syntheticSignature = (thinking: string): string => SYNTHETIC_SIGNATURE_PREFIX + fnv1a(thinking)

export const signatureOriginOf = (signature: string): SignatureOrigin =>
  signature.startsWith(GEMINI_SIGNATURE_PREFIX)
    ? "gemini"
    : signature.startsWith(OPENAI_SIGNATURE_PREFIX)
      ? "openai"
      : signature.startsWith(SYNTHETIC_SIGNATURE_PREFIX)
        ? "synthetic"
        : "anthropic"

/** A thinking signature as a client sent it → the vendor's own signature and its origin. */
export const readSignature = (raw: string): { readonly signature: string; readonly origin: SignatureOrigin } => {
  const origin = signatureOriginOf(raw)
  const prefix = origin === "gemini" ? GEMINI_SIGNATURE_PREFIX : origin === "openai" ? OPENAI_SIGNATURE_PREFIX : ""
  return { signature: raw.slice(prefix.length), origin }
}

/** The signature a client is handed for a thinking block (see `readSignature` for the way back). */
export const clientSignature = (signature: string, origin: SignatureOrigin | undefined): string =>
  origin === "gemini"
    ? GEMINI_SIGNATURE_PREFIX + signature
    : origin === "openai"
      ? OPENAI_SIGNATURE_PREFIX + signature
      : signature

/**
 * The Responses API carries reasoning across turns in a reasoning item's `encrypted_content`, which its clients only
 * ever receive from OpenAI: there an unwrapped value is OpenAI's own, and every other vendor's is wrapped, so that a
 * Responses client's history can go to any vendor and each gets back only what it issued.
 * `gw1.anthropic.<signature>`, `gw1.gemini.<signature>`, `gw1.redacted.<data>` (Anthropic's redacted thinking); a
 * thinking block nobody signed has no encrypted content at all.
 */
const RESPONSES_ANTHROPIC_PREFIX = "gw1.anthropic."
const RESPONSES_REDACTED_PREFIX = "gw1.redacted."

export type ResponsesReasoning =
  | { readonly type: "signed"; readonly signature: string; readonly origin: SignatureOrigin }
  | { readonly type: "redacted"; readonly data: string }
  | { readonly type: "unsigned" }

export const readResponsesEncrypted = (raw: string | undefined): ResponsesReasoning => {
  if (raw === undefined || raw === "") return { type: "unsigned" }
  if (raw.startsWith(RESPONSES_REDACTED_PREFIX))
    return { type: "redacted", data: raw.slice(RESPONSES_REDACTED_PREFIX.length) }
  if (raw.startsWith(RESPONSES_ANTHROPIC_PREFIX)) {
    return { type: "signed", signature: raw.slice(RESPONSES_ANTHROPIC_PREFIX.length), origin: "anthropic" }
  }
  if (raw.startsWith(GEMINI_SIGNATURE_PREFIX)) {
    return { type: "signed", signature: raw.slice(GEMINI_SIGNATURE_PREFIX.length), origin: "gemini" }
  }
  if (raw.startsWith(SYNTHETIC_SIGNATURE_PREFIX)) return { type: "unsigned" }
  return { type: "signed", signature: raw, origin: "openai" }
}

export const responsesEncrypted = (reasoning: ResponsesReasoning): string | undefined => {
  switch (reasoning.type) {
    case "redacted":
      return RESPONSES_REDACTED_PREFIX + reasoning.data
    case "unsigned":
      return undefined
    case "signed":
      switch (reasoning.origin) {
        case "openai":
          return reasoning.signature
        case "anthropic":
          return RESPONSES_ANTHROPIC_PREFIX + reasoning.signature
        case "gemini":
          return GEMINI_SIGNATURE_PREFIX + reasoning.signature
        case "synthetic":
          return undefined
      }
  }
}

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
