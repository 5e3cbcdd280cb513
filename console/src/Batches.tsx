import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import { type Client, type ListPage, loadPage, type MessageBatch, type OpenAiBatch, shortDate, unixIso } from "./api.ts"
import { Progress } from "./Videos.tsx"
import {
  type Async,
  Card,
  Empty,
  ErrorBox,
  Loading,
  Money,
  StatusBadge,
  saveBlob,
  useAsync,
  useInterval
} from "./ui.tsx"

/** Rows a page of batches shows. */
export const PAGE_SIZE = 20

/** Statuses of a batch that is still moving (refresh while one is on screen) and those that may be cancelled. */
export const RUNNING: ReadonlyArray<string> = ["validating", "in_progress", "finalizing", "cancelling", "canceling"]
export const CANCELLABLE: ReadonlyArray<string> = ["validating", "in_progress"]

/** Statuses a batch passes through in a moment (just cancelled, being checked or written out). */
const BRIEF: ReadonlyArray<string> = ["validating", "finalizing", "cancelling", "canceling"]

/**
 * How often a page showing batches of these statuses refreshes: every second while one is in a brief state (so a
 * cancel just asked shows as done at once), every 2 seconds while one runs, else not at all (0).
 */
export const refreshMillis = (statuses: ReadonlyArray<string>) =>
  statuses.some((s) => BRIEF.includes(s)) ? 1000 : statuses.some((s) => RUNNING.includes(s)) ? 2000 : 0

/** Refreshes with `reload` while batches of `statuses` are on screen (see refreshMillis). */
export const useBatchRefresh = (reload: () => void, statuses: ReadonlyArray<string>) => {
  const ms = refreshMillis(statuses)
  useInterval(reload, ms || 2000, ms > 0)
}

/** Lines done out of the total, as a whole percent (integers only). */
export const percentDone = (done: number, total: number) => (total <= 0 ? 0 : Math.floor((done * 100) / total))

/**
 * A cursor-paged list: the cursors of the pages visited are kept, so Older follows `last_id` and Newer goes back. A
 * change of filters is a new list: key the component that calls this by its filters.
 */
export const usePages = <T,>(load: (after: string | undefined) => Promise<ListPage<T>>) => {
  const [cursors, setCursors] = useState<ReadonlyArray<string | undefined>>([undefined])
  const after = cursors[cursors.length - 1]
  const loaded = useAsync(async () => ({ after, page: await load(after) }), [after])
  // Another page's rows are not shown while this one loads (useAsync keeps the last data on screen).
  const page: Async<ListPage<T>> = {
    ...loaded,
    data: loaded.data !== undefined && loaded.data.after === after ? loaded.data.page : undefined
  }
  const older = () => {
    const last = page.data?.last_id
    if (last != null) setCursors([...cursors, last])
  }
  const newer = () => setCursors(cursors.slice(0, -1))
  return { page, index: cursors.length - 1, older, newer }
}

export const Pager = ({
  label,
  index,
  hasMore,
  older,
  newer
}: {
  label: string
  index: number
  hasMore: boolean
  older: () => void
  newer: () => void
}) =>
  index === 0 && !hasMore ? null : (
    <nav class="pager" aria-label={label}>
      <button type="button" class="secondary" disabled={index === 0} onClick={newer}>
        Newer
      </button>
      <span>Page {index + 1}</span>
      <button type="button" class="secondary" disabled={!hasMore} onClick={older}>
        Older
      </button>
    </nav>
  )

/** A cancel button asking for a confirmation first; `cancel` is the API call. */
export const CancelBatch = ({ cancel, onDone }: { cancel: () => Promise<unknown>; onDone: () => void }) => {
  const [confirming, setConfirming] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const run = async () => {
    setBusy(true)
    setError(undefined)
    try {
      await cancel()
      setConfirming(false)
      onDone()
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      {confirming ? (
        <span class="confirm" role="alertdialog" aria-label="Confirm cancelling">
          <span class="small">Lines not started will not run.</span>
          <button type="button" class="danger small-button" onClick={run} disabled={busy}>
            {busy ? "Cancelling…" : "Yes, cancel"}
          </button>
          <button type="button" class="secondary small-button" onClick={() => setConfirming(false)} disabled={busy}>
            Keep running
          </button>
        </span>
      ) : (
        <button type="button" class="danger small-button" onClick={() => setConfirming(true)}>
          Cancel
        </button>
      )}
      {error !== undefined && <ErrorBox error={error} />}
    </>
  )
}

/** Downloads `path` with the secret in a header and saves it as `name`. */
export const Download = ({ api, path, name, label }: { api: Client; path: string; name: string; label: string }) => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const run = async () => {
    setBusy(true)
    setError(undefined)
    try {
      saveBlob(await api.blob(path), name)
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <button type="button" class="link nowrap" onClick={run} disabled={busy}>
        {busy ? "Downloading…" : label}
      </button>
      {error !== undefined && <ErrorBox error={error} />}
    </>
  )
}

/** The list's table once loaded; its errors and loading state otherwise. */
export const PageBody = <T,>({
  page,
  empty,
  children
}: {
  page: Async<ListPage<T>>
  empty: string
  children: (rows: ReadonlyArray<T>) => ComponentChildren
}) =>
  page.error !== undefined && page.data === undefined ? (
    <ErrorBox error={page.error} retry={page.reload} />
  ) : page.data === undefined ? (
    <Loading label="Loading batches…" />
  ) : page.data.data.length === 0 ? (
    <Empty>{empty}</Empty>
  ) : (
    <>
      {/* A failed refresh stops the polling: say so above the rows it left on screen. */}
      {page.error !== undefined && <ErrorBox error={page.error} retry={page.reload} />}
      <div class="table-wrap">{children(page.data.data)}</div>
    </>
  )

/** A batch's line counts, with a progress bar under them while it runs. */
export const Lines = ({
  text,
  running,
  done,
  total
}: {
  text: string
  running: boolean
  done: number
  total: number
}) => (
  <>
    <div class="nowrap" data-testid="batch-counts">
      {text}
    </div>
    {running && <Progress value={percentDone(done, total)} />}
  </>
)

/** When a batch was created and, under it, when it ended. */
export const Times = ({ created, ended }: { created: string | null; ended: string | null }) => (
  <>
    <div class="nowrap">{shortDate(created)}</div>
    <div class="nowrap muted" title="ended">
      {shortDate(ended)}
    </div>
  </>
)

// ---------- key holder ----------

const openAiEnded = (b: OpenAiBatch) => b.completed_at ?? b.failed_at ?? b.expired_at ?? b.cancelled_at

const OpenAiRow = ({ api, batch: b, onChange }: { api: Client; batch: OpenAiBatch; onChange: () => void }) => {
  const counts = b.request_counts
  return (
    <tr data-testid="openai-batch-row" data-batch={b.id} data-status={b.status}>
      <td>
        <span class="mono small">{b.id}</span>
        <div class="muted small mono">{b.endpoint}</div>
        {b.errors !== null && b.errors.data.length > 0 && (
          <div class="state-error small">{b.errors.data[0]?.message}</div>
        )}
      </td>
      <td>
        <StatusBadge status={b.status} />
      </td>
      <td>
        <Lines
          text={countsText(
            [
              [counts.completed, "ok"],
              [counts.failed, "failed"],
              [counts.total - counts.completed - counts.failed, unrunLabel(b.status)]
            ],
            counts.total
          )}
          running={RUNNING.includes(b.status)}
          done={counts.completed + counts.failed}
          total={counts.total}
        />
      </td>
      <td>
        <Times created={unixIso(b.created_at)} ended={unixIso(openAiEnded(b))} />
      </td>
      <td class="num">
        <Money value={b.charge?.captured} testId="batch-charged" />
      </td>
      <td>
        {b.output_file_id !== null && (
          <Download
            api={api}
            path={`/v1/files/${encodeURIComponent(b.output_file_id)}/content`}
            name={`${b.id}-output.jsonl`}
            label="Output"
          />
        )}{" "}
        {b.error_file_id !== null && (
          <Download
            api={api}
            path={`/v1/files/${encodeURIComponent(b.error_file_id)}/content`}
            name={`${b.id}-errors.jsonl`}
            label="Errors"
          />
        )}
      </td>
      <td>
        {CANCELLABLE.includes(b.status) && (
          <CancelBatch
            cancel={() => api.json(`/v1/batches/${encodeURIComponent(b.id)}/cancel`, { method: "POST" })}
            onDone={onChange}
          />
        )}
      </td>
    </tr>
  )
}

/** One surface's batches: its table, paged by the API's cursors and refreshed while one of them runs. */
const BatchCard = <T extends { readonly id: string }>(props: {
  readonly title: string
  readonly path: string
  readonly testId: string
  readonly empty: string
  readonly columns: ReadonlyArray<string>
  readonly load: (after: string | undefined) => Promise<ListPage<T>>
  readonly statusOf: (batch: T) => string
  readonly row: (batch: T, reload: () => void) => ComponentChildren
}) => {
  const { page, index, older, newer } = usePages(props.load)
  useBatchRefresh(page.reload, (page.data?.data ?? []).map(props.statusOf))
  return (
    <Card wide title={props.title} actions={<span class="muted small mono">{props.path}</span>}>
      <PageBody page={page} empty={props.empty}>
        {(rows) => (
          <table data-testid={props.testId}>
            <thead>
              <tr>
                {props.columns.map((column) => (
                  <th key={column}>{column}</th>
                ))}
              </tr>
            </thead>
            <tbody>{rows.map((batch) => props.row(batch, page.reload))}</tbody>
          </table>
        )}
      </PageBody>
      <Pager
        label={`Pages of ${props.title}`}
        index={index}
        hasMore={page.data?.has_more ?? false}
        older={older}
        newer={newer}
      />
    </Card>
  )
}

const after = (name: string, cursor: string | undefined) => (cursor ? `&${name}=${encodeURIComponent(cursor)}` : "")

const OpenAiBatches = ({ api }: { api: Client }) => (
  <BatchCard<OpenAiBatch>
    title="OpenAI batches"
    path="/v1/batches"
    testId="openai-batches"
    empty="No batch yet: upload a JSONL file to /v1/files, then POST /v1/batches."
    columns={["Batch", "Status", "Requests", "Created / ended (UTC)", "Charged", "Files", "Action"]}
    load={(cursor) => loadPage<OpenAiBatch>(api, `/v1/batches?limit=${PAGE_SIZE}${after("after", cursor)}`)}
    statusOf={(b) => b.status}
    row={(b, reload) => <OpenAiRow key={b.id} api={api} batch={b} onChange={reload} />}
  />
)

/** What the lines without a result are: waiting while the batch runs, never run once it has ended. */
export const unrunLabel = (status: string) => (RUNNING.includes(status) ? "pending" : "not run")

/** A batch's line counts, those at zero left out, then its total. */
export const countsText = (parts: ReadonlyArray<readonly [number, string]>, total: number) =>
  [...parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`), `${total} total`].join(" · ")

const messageTotal = (c: MessageBatch["request_counts"]) =>
  c.succeeded + c.errored + c.canceled + c.expired + c.processing

const messageCounts = (c: MessageBatch["request_counts"]) =>
  countsText(
    [
      [c.succeeded, "succeeded"],
      [c.errored, "errored"],
      [c.canceled, "canceled"],
      [c.expired, "expired"],
      [c.processing, "processing"]
    ],
    messageTotal(c)
  )

const MessageRow = ({ api, batch: b, onChange }: { api: Client; batch: MessageBatch; onChange: () => void }) => {
  const c = b.request_counts
  const total = messageTotal(c)
  return (
    <tr data-testid="message-batch-row" data-batch={b.id} data-status={b.processing_status}>
      <td class="mono small">{b.id}</td>
      <td>
        <StatusBadge status={b.processing_status} />
      </td>
      <td>
        <Lines
          text={messageCounts(c)}
          running={RUNNING.includes(b.processing_status)}
          done={total - c.processing}
          total={total}
        />
      </td>
      <td>
        <Times created={b.created_at} ended={b.ended_at} />
      </td>
      <td>
        {b.processing_status === "ended" && (
          <Download
            api={api}
            path={`/v1/messages/batches/${encodeURIComponent(b.id)}/results`}
            name={`${b.id}-results.jsonl`}
            label="Results"
          />
        )}
      </td>
      <td>
        {CANCELLABLE.includes(b.processing_status) && (
          <CancelBatch
            cancel={() => api.json(`/v1/messages/batches/${encodeURIComponent(b.id)}/cancel`, { method: "POST" })}
            onDone={onChange}
          />
        )}
      </td>
    </tr>
  )
}

const MessageBatches = ({ api }: { api: Client }) => (
  <BatchCard<MessageBatch>
    title="Anthropic message batches"
    path="/v1/messages/batches"
    testId="message-batches"
    empty="No message batch yet: POST /v1/messages/batches."
    columns={["Batch", "Status", "Requests", "Created / ended (UTC)", "Results", "Action"]}
    load={(cursor) =>
      loadPage<MessageBatch>(api, `/v1/messages/batches?limit=${PAGE_SIZE}${after("after_id", cursor)}`)
    }
    statusOf={(b) => b.processing_status}
    row={(b, reload) => <MessageRow key={b.id} api={api} batch={b} onChange={reload} />}
  />
)

export const HolderBatches = ({ api }: { api: Client }) => (
  <>
    <div class="page-head">
      <h1>Batches</h1>
      <span class="muted small">
        Your account's batches on both surfaces, newest first, refreshed every second or two while one runs. Lines are
        billed at batch prices as each one ends.
      </span>
    </div>
    <OpenAiBatches api={api} />
    <MessageBatches api={api} />
  </>
)
