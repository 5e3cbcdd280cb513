/**
 * Thinking blocks made from another vendor's reasoning need a signature to satisfy Anthropic clients, but they are not
 * signed by Anthropic. Tagging them `gw1.` lets the request converter recognise and strip them before they could reach a
 * real Anthropic upstream (which would answer 400 on a forged signature).
 */
import { fnv1a } from "./json.ts"
import type { SignatureOrigin } from "./ChatIR.ts"

export const SYNTHETIC_SIGNATURE_PREFIX = "gw1."

export const syntheticSignature = (thinking: string): string => SYNTHETIC_SIGNATURE_PREFIX + fnv1a(thinking)

export const signatureOriginOf = (signature: string): SignatureOrigin =>
  signature.startsWith(SYNTHETIC_SIGNATURE_PREFIX) ? "synthetic" : "anthropic"
