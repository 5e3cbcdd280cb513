/**
 * Finds the API key a client presented, the way each vendor's SDK sends it: `Authorization: Bearer` everywhere,
 * `x-api-key` on the messages protocol (and on any request carrying `anthropic-version`, as the Anthropic SDK does
 * for /v1/models), `x-goog-api-key` or `?key=` on the Google path.
 */
import { clip } from "../domain/Quoted.ts"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { type AuthenticatedKey, Keys } from "../app/Keys.ts"
import { RateLimiter } from "../app/RateLimiter.ts"
import { atResponseEnd, noteKey } from "../app/RequestTelemetry.ts"
import { apiError, type Dialect } from "./ApiError.ts"
import { throttled } from "./AuthThrottle.ts"

const bearer = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const match = /^Bearer\s+(.+)$/i.exec(header.trim())
  return match === null ? header.trim() : match[1].trim()
}

export const presentedKey = (request: HttpServerRequest.HttpServerRequest, dialect: Dialect): string | undefined => {
  const headers = request.headers
  const fromBearer = bearer(headers.authorization)
  if (fromBearer !== undefined && fromBearer.length > 0) return fromBearer
  if (
    dialect === "anthropic" ||
    headers["anthropic-version"] !== undefined ||
    headers["vendor-version"] !== undefined
  ) {
    const key = headers["x-api-key"]
    if (key !== undefined) return key.trim()
  }
  if (dialect === "gemini") {
    const key = headers["x-goog-api-key"] ?? new URL(request.url, "http://x").searchParams.get("key") ?? undefined
    if (key !== undefined) return key.trim()
  }
  return undefined
}

export const authenticate = (dialect: Dialect) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    // Keys are looked up by their SHA-256 digest and the digests compared with timingSafeEqual (PgKeys.ts), so the
    // time taken does not depend on how much of a guess was right. Failures count towards the address's throttle.
    const key = yield* throttled((yield* Keys).authenticate(presentedKey(request, dialect)))
    yield* noteKey(key.keyId, key.accountId)
    // The key's rate limits: a refusal is a 429 before anything is held; a slot is kept until the response ends.
    const admission = yield* (yield* RateLimiter).admit(key.keyId, key.rateLimits)
    yield* atResponseEnd(admission.release)
    return key
  })

/** A model outside the key's allow-list is a 403: the key is valid, the model is not granted to it. */
export const requireModelAllowed = (key: AuthenticatedKey, model: string) =>
  key.models === null || key.models.includes(model)
    ? Effect.void
    : Effect.fail(
        apiError(403, `this API key is not allowed to use the model '${clip(model)}'`, {
          type: "permission_error",
          code: "model_not_allowed"
        })
      )
