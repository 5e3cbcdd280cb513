/**
 * What the client sees for each typed failure of the app layer: one rule per error tag, checked by the compiler
 * against the error classes themselves (a renamed field or a new tag in the union fails to build). Envelopes per
 * protocol are ApiError.ts's; statuses for a plugin's failure reasons are app/FailureStatus.ts's.
 */
import type { InvalidChatRequest, ModelNotAllowed, ModelNotFound, UpstreamFailed } from "../app/ChatErrors.ts"
import type { ContentStoreError } from "../app/ContentStore.ts"
import { NOT_STORED_CODE, notStoredMessage, type ResponseNotStored } from "../app/DeliveredTurn.ts"
import type { KeyNotFound, KeyRejected } from "../app/Keys.ts"
import type { LedgerRejected } from "../app/LedgerErrors.ts"
import type { RateLimited } from "../app/RateLimiter.ts"
import type {
  ConversationItemNotFound,
  ConversationNotFound,
  ResponseNotCancellable,
  ResponseNotFound
} from "../app/responses/ResponsesErrors.ts"
import type { IdempotencyConflict, StoreRefused, StoreUnavailable } from "../app/StoreErrors.ts"
import type {
  BatchInvalid,
  BatchNotCancellable,
  BatchNotDeletable,
  BatchNotFound,
  FileNotFound
} from "../app/batch/BatchErrors.ts"
import type { VideoExpired, VideoNotFound, VideoNotReady } from "../app/video/VideoTaskParts.ts"
import { clip } from "../domain/Quoted.ts"
import { type ApiError, apiError } from "./ApiError.ts"
import { statusOfFailure } from "../app/FailureStatus.ts"

/** Every failure the routes answer with a 4xx or 5xx of their own; anything else is a defect (a 500, logged). */
export type MappedError =
  | ApiError
  | RateLimited
  | StoreUnavailable
  | StoreRefused
  | IdempotencyConflict
  | ModelNotFound
  | ModelNotAllowed
  | InvalidChatRequest
  | UpstreamFailed
  | ResponseNotFound
  | ResponseNotStored
  | ConversationNotFound
  | ConversationItemNotFound
  | ResponseNotCancellable
  | VideoNotFound
  | FileNotFound
  | BatchNotFound
  | BatchInvalid
  | BatchNotCancellable
  | BatchNotDeletable
  | VideoNotReady
  | VideoExpired
  | ContentStoreError
  | KeyNotFound
  | KeyRejected
  | LedgerRejected

type Rules = {
  readonly [Tag in MappedError["_tag"]]: (error: Extract<MappedError, { readonly _tag: Tag }>) => ApiError
}

const KEY_MESSAGES: Record<KeyRejected["reason"], string> = {
  missing: "You didn't provide an API key. Send it as 'Authorization: Bearer sk-…'.",
  malformed: "The API key is malformed: Tollgate keys look like 'sk-' followed by 43 letters and digits.",
  unknown: "Incorrect API key provided.",
  revoked: "This API key has been revoked.",
  expired: "This API key has expired."
}

const rules: Rules = {
  ApiError: (error) => error,
  RateLimited: (error) =>
    apiError(429, error.message, {
      type: "rate_limit_error",
      code: "rate_limit_exceeded",
      headers: { "retry-after": String(error.retryAfterSeconds) }
    }),
  StoreUnavailable: () =>
    apiError(503, "the ledger store is unavailable right now; nothing was charged, retry shortly", {
      code: "store_unavailable"
    }),
  // The edge checks what reaches storage; a value that still slipped through fails this request alone.
  StoreRefused: (error) =>
    apiError(
      400,
      `the request carries a value the ledger cannot store (database error ${error.sqlState}); nothing was charged`,
      { code: "unstorable_value" }
    ),
  IdempotencyConflict: () =>
    apiError(409, "this Idempotency-Key was already used with a different request body", {
      code: "idempotency_key_reused"
    }),
  ModelNotFound: (error) =>
    apiError(404, `The model \`${clip(error.model)}\` does not exist or you do not have access to it.`, {
      code: "model_not_found",
      param: "model"
    }),
  ModelNotAllowed: (error) =>
    apiError(403, `this API key is not allowed to use the model '${error.model}'`, {
      type: "permission_error",
      code: "model_not_allowed",
      param: "model"
    }),
  InvalidChatRequest: (error) =>
    apiError(400, error.param === null ? error.message : `${error.param}: ${error.message}`, {
      param: error.param,
      code: "invalid_request"
    }),
  UpstreamFailed: (error) => {
    const status = statusOfFailure(error.reason)
    // Who refused is said by the code: the gateway's own checks never pass for the upstream's.
    const fallback =
      status === 429
        ? "rate_limit_exceeded"
        : status >= 500
          ? "upstream_error"
          : error.origin === "gateway"
            ? "invalid_request"
            : "upstream_rejected"
    return apiError(status, error.message, {
      code: error.code ?? fallback,
      param: error.param ?? null,
      ...(error.retryAfterSeconds === undefined ? {} : { headers: { "retry-after": String(error.retryAfterSeconds) } })
    })
  },
  ResponseNotFound: (error) =>
    apiError(404, `Response with id '${error.id}' not found.`, { code: "not_found", param: "response_id" }),
  // The response was not kept (and is not billed): a client that retries gets a new one.
  ResponseNotStored: (error) => apiError(503, notStoredMessage(error.reason), { code: NOT_STORED_CODE }),
  ConversationNotFound: (error) =>
    apiError(404, `Conversation with id '${error.id}' not found.`, { code: "not_found", param: "conversation_id" }),
  ConversationItemNotFound: (error) =>
    apiError(404, `Item with id '${error.itemId}' not found.`, { code: "not_found", param: "item_id" }),
  ResponseNotCancellable: (error) => apiError(400, error.message, { code: "invalid_request", param: "response_id" }),
  VideoNotFound: (error) =>
    apiError(404, `No video found with id '${error.id}'.`, { code: "video_not_found", param: "id" }),
  VideoNotReady: ({ id, status }) =>
    apiError(
      409,
      status === "failed"
        ? `Video '${clip(id)}' failed and has no content; see its error with GET /v1/videos/${id}.`
        : `Video '${clip(id)}' is ${status}; its content can be downloaded once its status is completed.`,
      { code: "video_not_ready" }
    ),
  VideoExpired: (error) =>
    apiError(410, `The content of video '${error.id}' has expired and was deleted.`, { code: "video_expired" }),
  FileNotFound: (error) =>
    apiError(404, `No such File object: ${clip(error.fileId)}`, { code: "not_found", param: "id" }),
  BatchNotFound: (error) =>
    apiError(404, `No batch found with id '${clip(error.batchId)}'.`, { code: "not_found", param: "batch_id" }),
  BatchInvalid: (error) => apiError(400, error.message, { code: error.code, param: error.param }),
  BatchNotCancellable: (error) =>
    apiError(409, `Cannot cancel a batch with status '${error.status}'.`, { code: "batch_not_cancellable" }),
  BatchNotDeletable: (error) =>
    apiError(409, `Cannot delete a batch with status '${error.status}': it must end first (cancel it).`, {
      code: "batch_not_deletable"
    }),
  ContentStoreError: () =>
    apiError(503, "the content store is unavailable right now; retry shortly", { code: "storage_unavailable" }),
  KeyNotFound: () => apiError(404, "no such API key", { code: "key_not_found" }),
  KeyRejected: (error) =>
    apiError(401, KEY_MESSAGES[error.reason], {
      code: error.reason === "missing" ? null : "invalid_api_key"
    }),
  LedgerRejected: (error) => {
    switch (error.reason) {
      case "AccountNotFound":
        return apiError(404, error.message, { code: "account_not_found" })
      case "InsufficientBalance":
      case "SpendLimitExceeded":
        return apiError(402, `You exceeded your current quota: ${error.message}`, {
          type: "insufficient_quota",
          code: "insufficient_quota",
          headers: { "x-should-retry": "false" }
        })
      case "InvalidAmount":
        return apiError(400, error.message, { code: "invalid_amount" })
      default:
        return apiError(409, error.message, { code: "conflict" })
    }
  }
}

const isMapped = (error: unknown): error is MappedError =>
  typeof error === "object" &&
  error !== null &&
  typeof (error as { _tag?: unknown })._tag === "string" &&
  Object.hasOwn(rules, (error as { _tag: string })._tag)

/** The error the client sees for a failure; undefined for one no rule knows (a defect, handled by the caller). */
export const toApiError = (error: unknown): ApiError | undefined =>
  // The table is indexed by the tag it was checked against, so the rule and the error agree.
  isMapped(error) ? (rules[error._tag] as (error: MappedError) => ApiError)(error) : undefined
