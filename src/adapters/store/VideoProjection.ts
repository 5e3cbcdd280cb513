/**
 * The `video_tasks` row of a task, built from the aggregate's state. The live writers (the ledger writer for
 * submission, completion and failure; the task store for dispatch, progress and content expiry) and replay build
 * rows with this one function and write them with this one statement.
 */
import type { SqlClient } from "effect/sql"
import { parseDecimal } from "../../domain/Money.ts"
import type { VideoTaskState } from "../../domain/video/VideoTask.ts"
import { recordsJson } from "./EventAppends.ts"

/** A decimal amount as the micro-dollars column wants it, in decimal text (a JSON number would stop at 2^53). */
const micros = (decimal: string | null): string | null => {
  const value = decimal === null ? undefined : parseDecimal(decimal)
  return value === undefined ? null : String(value)
}

export const videoTaskRecords = (states: ReadonlyArray<VideoTaskState>): string =>
  recordsJson(
    states.map((s) => ({
      id: s.taskId,
      account_id: s.accountId,
      key_id: s.keyId,
      model: s.model,
      plugin: s.plugin,
      hold_id: s.holdId,
      status: s.status,
      progress: s.progress,
      prompt: s.prompt,
      seconds: s.seconds,
      resolution: s.resolution,
      ratio: s.ratio,
      input_type: s.inputType,
      images: s.images,
      videos: s.videos,
      held: micros(s.held),
      estimated_tokens: String(BigInt(s.estimatedTokens)),
      upstream_task_id: s.upstream?.taskId ?? null,
      upstream_index: s.upstream?.index ?? null,
      upstream_name: s.upstream?.name ?? null,
      tokens: s.tokens === null ? null : String(BigInt(s.tokens)),
      tokens_reported: s.tokensReported,
      cost: micros(s.cost),
      content: s.content === null ? null : { ...s.content },
      error_reason: s.error?.reason ?? null,
      error_code: s.error?.code ?? null,
      error_message: s.error?.message ?? null,
      idempotency_key: s.idempotencyKey,
      request_hash: s.requestHash,
      request_id: s.requestId,
      created_at: s.createdAt,
      deadline_at: s.deadlineAt,
      completed_at: s.completedAt,
      failed_at: s.failedAt,
      expires_at: s.expiresAt,
      content_expired_at: s.contentExpiredAt,
      updated_at: s.updatedAt,
      version: String(s.version)
    }))
  )

export const VIDEO_TASK_COLUMNS =
  "id, account_id, key_id, model, plugin, hold_id, status, progress, prompt, seconds, resolution, ratio, input_type, images, videos, held, estimated_tokens, upstream_task_id, upstream_index, tokens, tokens_reported, cost, content, error_reason, error_code, error_message, idempotency_key, request_hash, request_id, created_at, deadline_at, completed_at, failed_at, expires_at, content_expired_at, updated_at, version, upstream_name"

/** Inserts or replaces whole rows (the state is always complete); `schema` is "public" or a replay scratch schema. */
export const upsertVideoTasksSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  INSERT INTO ${sql(schema)}.video_tasks (${sql.literal(VIDEO_TASK_COLUMNS)})
  SELECT ${sql.literal(VIDEO_TASK_COLUMNS)}
  FROM jsonb_to_recordset(${records}::jsonb) AS t(id text, account_id uuid, key_id uuid, model text, plugin text,
    hold_id uuid, status text, progress integer, prompt text, seconds integer, resolution text, ratio text,
    input_type text, images jsonb, videos jsonb, held bigint, estimated_tokens bigint, upstream_task_id text,
    upstream_index integer, tokens bigint, tokens_reported boolean, cost bigint, content jsonb, error_reason text,
    error_code text, error_message text, idempotency_key text, request_hash text, request_id text,
    created_at timestamptz, deadline_at timestamptz, completed_at timestamptz, failed_at timestamptz,
    expires_at timestamptz, content_expired_at timestamptz, updated_at timestamptz, version bigint, upstream_name text)
  ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, progress = EXCLUDED.progress,
    upstream_task_id = EXCLUDED.upstream_task_id, upstream_index = EXCLUDED.upstream_index,
    upstream_name = EXCLUDED.upstream_name,
    tokens = EXCLUDED.tokens, tokens_reported = EXCLUDED.tokens_reported, cost = EXCLUDED.cost,
    content = EXCLUDED.content, error_reason = EXCLUDED.error_reason, error_code = EXCLUDED.error_code,
    error_message = EXCLUDED.error_message, completed_at = EXCLUDED.completed_at, failed_at = EXCLUDED.failed_at,
    expires_at = EXCLUDED.expires_at, content_expired_at = EXCLUDED.content_expired_at,
    updated_at = EXCLUDED.updated_at, version = EXCLUDED.version`
