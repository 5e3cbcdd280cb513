/**
 * How a delivery is signed, and how a receiver checks it (docs/alerts.md has the recipe): HMAC-SHA256 with the
 * endpoint's secret over `<unix seconds>.<raw body>`, sent as `x-tollgate-signature: t=<unix seconds>,v1=<hex>`.
 * The timestamp inside the signed text lets a receiver refuse old replays; the scheme is Stripe's, which many
 * webhook receivers already know how to check.
 */
import { createHmac, timingSafeEqual } from "node:crypto"

export const SIGNATURE_HEADER = "x-tollgate-signature"

export const signatureOf = (secret: string, timestamp: number, body: string): string =>
  `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`

/** Whether `header` signs `body` with `secret`, within `toleranceSeconds` of `nowSeconds`. */
export const verifySignature = (
  secret: string,
  header: string,
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300
): boolean => {
  const parts = new Map(header.split(",").map((part) => part.split("=", 2) as [string, string]))
  const timestamp = Number(parts.get("t"))
  const given = parts.get("v1") ?? ""
  if (!Number.isSafeInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false
  const expected = signatureOf(secret, timestamp, body).split("v1=")[1] ?? ""
  return given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected))
}

/** When to try a delivery again after its `attempts`-th failure: 5 s, tripling, at most an hour; null: give up. */
export const retryDelayMs = (attempts: number, maxAttempts: number): number | null =>
  attempts >= maxAttempts ? null : Math.min(3_600_000, 5_000 * 3 ** Math.max(0, attempts - 1))
