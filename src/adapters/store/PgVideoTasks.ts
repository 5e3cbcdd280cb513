/**
 * Postgres side of video tasks: the stream fold, appends that write the read model in the same transaction, the
 * read-model queries, and the polling leases. Used by the VideoTasks service; money-moving task events go through
 * the ledger writer instead (as companions of a hold command).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { EventStore } from "../../app/EventStore.ts"
import type { StoreUnavailable, StreamVersionConflict } from "../../app/StoreErrors.ts"
import { type KnownVideoModel, type VideoTaskRow, VideoTaskStore } from "../../app/ports/VideoTaskStore.ts"
import {
  fold,
  isVideoEventType,
  type VideoTaskEvent,
  type VideoTaskState,
  videoStream
} from "../../domain/video/VideoTask.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { upsertVideoTasksSql, videoTaskRecords } from "./VideoProjection.ts"

/** The task as its events say, or undefined when the stream does not exist. */
export const loadTask = (taskId: string) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const stored = yield* store.readStream(videoStream(taskId))
    const events = stored.flatMap((e) =>
      isVideoEventType(e.type) ? [{ type: e.type, data: e.data } as VideoTaskEvent] : []
    )
    return fold(events)
  })

/** Appends task events at the state's version and writes the row folded from them, in one transaction. */
export const appendTask = (
  state: VideoTaskState,
  events: ReadonlyArray<VideoTaskEvent>,
  next: VideoTaskState,
  metadata: Record<string, unknown>,
  at: Date
): Effect.Effect<void, StoreUnavailable | StreamVersionConflict, SqlClient.SqlClient | EventStore> =>
  Effect.gen(function* () {
    if (events.length === 0) return
    const sql = yield* SqlClient.SqlClient
    const store = yield* EventStore
    yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* store.append(
            videoStream(state.taskId),
            state.version,
            events.map((event) => ({ eventId: crypto.randomUUID(), type: event.type, data: event.data, metadata })),
            at
          )
          yield* upsertVideoTasksSql(sql, "public", videoTaskRecords([next]))
        })
      )
      .pipe(orUnavailable)
  })

/** A row of the read model joined with its hold: what `GET /v1/videos/{id}` shows. */
const ROW = (sql: SqlClient.SqlClient) => sql`
  SELECT t.id, t.account_id::text, t.model, t.status, t.progress, t.prompt, t.seconds, t.resolution, t.ratio,
    t.input_type, t.error_code, t.error_message, t.content, t.tokens::text, t.created_at, t.completed_at,
    t.expires_at, t.content_expired_at, t.held::text, h.captured::text, h.refunded::text, h.status AS hold_status
  FROM video_tasks t LEFT JOIN holds h ON h.hold_id = t.hold_id`

export const findTaskRow = (accountId: string, taskId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<VideoTaskRow>`${ROW(sql)} WHERE t.id = ${taskId} AND t.account_id = ${accountId}::uuid`
    return rows[0]
  }).pipe(orUnavailable)

/** A page of an account's tasks, newest first (or oldest first), after the task `after`. */
export const listTaskRows = (
  accountId: string,
  options: { readonly limit: number; readonly after: string | undefined; readonly order: "asc" | "desc" }
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const cursor =
      options.after === undefined
        ? sql`TRUE`
        : options.order === "desc"
          ? sql`(t.created_at, t.id) < (SELECT created_at, id FROM video_tasks WHERE id = ${options.after})`
          : sql`(t.created_at, t.id) > (SELECT created_at, id FROM video_tasks WHERE id = ${options.after})`
    const direction = sql.literal(options.order === "desc" ? "DESC" : "ASC")
    return yield* sql<VideoTaskRow>`${ROW(sql)}
      WHERE t.account_id = ${accountId}::uuid AND ${cursor}
      ORDER BY t.created_at ${direction}, t.id ${direction} LIMIT ${options.limit + 1}`
  }).pipe(orUnavailable)

/**
 * Takes up to `limit` unfinished tasks whose lease is free (never taken, or past `lease_until`) for `owner` until
 * `until`. Two instances racing for one task: the conditional upsert lets exactly one of them have it.
 *
 * Only tasks this worker can follow: its catalog has the task's model and, once the task is dispatched, the upstream
 * that took it (a task dispatched before the upstream was recorded goes by its model alone). Instances with different
 * catalogs on one database thus leave each other's tasks alone. Past its deadline any worker takes a task whatever
 * its model, so a task no instance knows is still failed and refunded then (the step checks the deadline first).
 */
export const claimDueTasks = (
  owner: string,
  now: Date,
  until: Date,
  limit: number,
  known: ReadonlyArray<KnownVideoModel>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const models = known.map((k) => k.model)
    const pairs = known.flatMap((k) => k.upstreams.map((upstream) => [k.model, upstream] as const))
    const rows = yield* sql<{ task_id: string; failures: number; missing_polls: number }>`
      INSERT INTO video_task_leases (task_id, owner, lease_until)
      SELECT t.id, ${owner}, ${until} FROM video_tasks t
      LEFT JOIN video_task_leases l ON l.task_id = t.id
      WHERE t.status IN ('queued', 'in_progress') AND (l.task_id IS NULL OR l.lease_until <= ${now})
        AND (t.deadline_at <= ${now}
          OR (t.upstream_name IS NULL AND t.model = ANY (${models}::text[]))
          OR (t.model, t.upstream_name) IN (
            SELECT k.model, k.upstream
            FROM unnest(${pairs.map((p) => p[0])}::text[], ${pairs.map((p) => p[1])}::text[]) AS k(model, upstream)))
      ORDER BY coalesce(l.lease_until, t.created_at) LIMIT ${limit}
      ON CONFLICT (task_id) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until
        WHERE video_task_leases.lease_until <= ${now}
      RETURNING task_id, failures, missing_polls`
    return rows
  }).pipe(orUnavailable)

/**
 * Keeps the task for `owner` and makes it due again at `nextAt` (a poll interval or a back-off later), with its
 * counts of consecutive failed polls and of consecutive polls the upstream answered 404.
 */
export const rescheduleTask = (taskId: string, owner: string, nextAt: Date, failures: number, missingPolls: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE video_task_leases SET lease_until = ${nextAt}, failures = ${failures},
      missing_polls = ${missingPolls}
      WHERE task_id = ${taskId} AND owner = ${owner}`
  }).pipe(orUnavailable)

/** A finished task needs no lease. */
export const dropLease = (taskId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM video_task_leases WHERE task_id = ${taskId}`
  }).pipe(orUnavailable)

/** Completed tasks whose stored content is past its expiry and not yet recorded as expired. */
export const dueContentExpiries = (now: Date, limit: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: string }>`
      SELECT id FROM video_tasks
      WHERE status = 'completed' AND content_expired_at IS NULL AND expires_at <= ${now}
      ORDER BY expires_at LIMIT ${limit}`
  }).pipe(orUnavailable)

/** The video task port over these statements and the event store. */
export const layer = Layer.effect(
  VideoTaskStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventStore
    const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | EventStore>) =>
      effect.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.provideService(EventStore, events))
    return VideoTaskStore.of({
      load: (taskId) => run(loadTask(taskId)),
      append: (state, appended, next, metadata, at) => run(appendTask(state, appended, next, metadata, at)),
      projection: (next) => (client) => upsertVideoTasksSql(client, "public", videoTaskRecords([next])),
      find: (accountId, taskId) => run(findTaskRow(accountId, taskId)),
      list: (accountId, options) => run(listTaskRows(accountId, options)),
      claimDue: (owner, now, until, limit, known) => run(claimDueTasks(owner, now, until, limit, known)),
      // Atomic against `claimDue`: either another instance's claim lands first and this answers false, or this
      // lands first and the claim, which only takes leases past their end, skips the task until `until`.
      keepLease: (taskId, owner, until) =>
        Effect.map(
          orUnavailable(sql<{ task_id: string }>`UPDATE video_task_leases SET lease_until = ${until}
            WHERE task_id = ${taskId} AND owner = ${owner} RETURNING task_id`),
          (rows) => rows.length === 1
        ),
      extendLease: (taskId, owner, until) =>
        Effect.asVoid(
          orUnavailable(sql`UPDATE video_task_leases SET lease_until = GREATEST(lease_until, ${until})
            WHERE task_id = ${taskId} AND owner = ${owner}`)
        ),
      reschedule: (taskId, owner, nextAt, failures, missingPolls) =>
        run(rescheduleTask(taskId, owner, nextAt, failures, missingPolls)),
      dropLease: (taskId) => run(dropLease(taskId)),
      dueContentExpiries: (now, limit) => run(dueContentExpiries(now, limit))
    })
  })
)
