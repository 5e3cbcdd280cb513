import { useState } from "preact/hooks"
import { type Account, type AdminBatch, type Client, loadPage, shortDate } from "./api.ts"
import {
  CANCELLABLE,
  CancelBatch,
  countsText,
  Lines,
  PAGE_SIZE,
  PageBody,
  Pager,
  percentDone,
  RUNNING,
  Times,
  unrunLabel,
  useBatchRefresh,
  usePages
} from "./Batches.tsx"
import { BATCH_STATUSES } from "../../src/domain/batch/BatchStatus.ts"
import { Progress } from "./Videos.tsx"
import { Card, ErrorBox, Loading, Money, StatusBadge, useAsync } from "./ui.tsx"

const SURFACES = { openai: "OpenAI", anthropic: "Anthropic" } as const

const surfaceOf = (b: AdminBatch) => SURFACES[b.surface] ?? b.surface

const countsOf = ({ requestCounts: c, status }: AdminBatch) =>
  countsText(
    [
      [c.completed, "ok"],
      [c.failed, "failed"],
      [c.pending, unrunLabel(status)]
    ],
    c.total
  )

export const OperatorBatchesView = ({ api }: { api: Client }) => {
  const accounts = useAsync(() => api.json<{ data: Account[] }>("/admin/accounts?limit=200"), [api])
  const [accountId, setAccountId] = useState("")
  const [status, setStatus] = useState("")
  const names = new Map((accounts.data?.data ?? []).map((a) => [a.id, a.name]))
  return (
    <>
      <div class="page-head">
        <h1>Batches</h1>
        <span class="muted small">
          Every account's batches, OpenAI's and Anthropic's, newest first; refreshed every second or two while one runs.
        </span>
      </div>
      <Card wide title="All batches">
        <form class="filters" aria-label="Batch filters" onSubmit={(e) => e.preventDefault()}>
          <label>
            Account
            <select name="batch-account" value={accountId} onChange={(e) => setAccountId(e.currentTarget.value)}>
              <option value="">all</option>
              {(accounts.data?.data ?? []).map((a) => (
                <option key={a.id} value={a.id}>
                  {a.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Status
            <select name="batch-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="">all</option>
              {BATCH_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s.replace("_", " ")}
                </option>
              ))}
            </select>
          </label>
        </form>
        {accounts.error !== undefined && <ErrorBox error={accounts.error} retry={accounts.reload} />}
        {/* Keyed by the filters: other filters start from their own first page. */}
        <BatchTable key={`${accountId}|${status}`} api={api} accountId={accountId} status={status} names={names} />
      </Card>
    </>
  )
}

const BatchTable = ({
  api,
  accountId,
  status,
  names
}: {
  api: Client
  accountId: string
  status: string
  names: ReadonlyMap<string, string>
}) => {
  const { page, index, older, newer } = usePages((after) => {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) })
    if (accountId !== "") query.set("accountId", accountId)
    if (status !== "") query.set("status", status)
    if (after !== undefined) query.set("after", after)
    return loadPage<AdminBatch>(api, `/admin/batches?${query}`)
  })
  useBatchRefresh(
    page.reload,
    (page.data?.data ?? []).map((b) => b.status)
  )
  return (
    <>
      <PageBody page={page} empty={accountId === "" && status === "" ? "No batch yet." : "No batch matches."}>
        {(rows) => (
          <table data-testid="admin-batches">
            <thead>
              <tr>
                <th>Batch</th>
                <th>Account</th>
                <th>Status</th>
                <th>Requests</th>
                <th>Charged</th>
                <th>Created / ended (UTC)</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((b) => (
                <tr key={b.id} data-testid="admin-batch-row" data-batch={b.id} data-status={b.status}>
                  <td>
                    <a class="mono small" href={`#/batches/${encodeURIComponent(b.id)}`}>
                      {b.id}
                    </a>
                    <div class="muted small">
                      {surfaceOf(b)} <span class="mono">{b.endpoint}</span>
                    </div>
                  </td>
                  <td>
                    <a href={`#/accounts/${b.accountId}`} title={b.accountId}>
                      {names.get(b.accountId) ?? `${b.accountId.slice(0, 8)}…`}
                    </a>
                  </td>
                  <td>
                    <StatusBadge status={b.status} />
                  </td>
                  <td class="small">
                    <Lines
                      text={countsOf(b)}
                      running={RUNNING.includes(b.status)}
                      done={b.requestCounts.total - b.requestCounts.pending}
                      total={b.requestCounts.total}
                    />
                  </td>
                  <td class="num">
                    <Money value={b.charged} />
                  </td>
                  <td>
                    <Times created={b.createdAt} ended={b.endedAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </PageBody>
      <Pager label="Batch pages" index={index} hasMore={page.data?.has_more ?? false} older={older} newer={newer} />
    </>
  )
}

const Field = ({ label, children }: { label: string; children: preact.ComponentChildren }) => (
  <div>
    <dt>{label}</dt>
    <dd>{children}</dd>
  </div>
)

export const OperatorBatchView = ({ api, id }: { api: Client; id: string }) => {
  const path = `/admin/batches/${encodeURIComponent(id)}`
  const batch = useAsync(() => api.json<AdminBatch>(path), [path])
  useBatchRefresh(batch.reload, batch.data === undefined ? [] : [batch.data.status])
  const head = (
    <div class="page-head">
      <a href="#/batches" class="link">
        ← Batches
      </a>
      <h1 class="mono">{id}</h1>
    </div>
  )
  if (batch.error !== undefined && batch.data === undefined) {
    return (
      <>
        {head}
        <ErrorBox error={batch.error} retry={batch.reload} />
      </>
    )
  }
  if (batch.data === undefined) return <Loading label="Loading batch…" />
  const b = batch.data
  return (
    <>
      {head}
      {batch.error !== undefined && <ErrorBox error={batch.error} retry={batch.reload} />}
      <Card
        title="Batch"
        actions={
          CANCELLABLE.includes(b.status) && (
            <CancelBatch cancel={() => api.json(`${path}/cancel`, { method: "POST" })} onDone={batch.reload} />
          )
        }
      >
        <div data-testid="admin-batch" data-status={b.status}>
          <p>
            <StatusBadge status={b.status} /> <span data-testid="batch-counts">{countsOf(b)}</span>
          </p>
          {RUNNING.includes(b.status) && (
            <Progress value={percentDone(b.requestCounts.total - b.requestCounts.pending, b.requestCounts.total)} />
          )}
          {b.error !== null && <p class="state-error">{b.error}</p>}
          <dl class="stats" data-testid="batch-money">
            <Field label="Charged">
              <Money value={b.charged} testId="batch-charged" />
            </Field>
            <Field label="Held">
              <Money value={b.held} testId="batch-held" />
            </Field>
            <Field label="Refunded">
              <Money value={b.refunded} testId="batch-refunded" />
            </Field>
          </dl>
        </div>
      </Card>
      <Card title="Details">
        <dl class="details">
          <Field label="Account">
            <a href={`#/accounts/${b.accountId}`} class="mono small">
              {b.accountId}
            </a>
          </Field>
          <Field label="Key">
            <span class="mono small">{b.keyId}</span>
          </Field>
          <Field label="Surface">{surfaceOf(b)}</Field>
          <Field label="Endpoint">
            <span class="mono small">{b.endpoint}</span>
          </Field>
          <Field label="Created (UTC)">{shortDate(b.createdAt)}</Field>
          <Field label="In progress (UTC)">{shortDate(b.inProgressAt)}</Field>
          <Field label="Cancelling (UTC)">{shortDate(b.cancellingAt)}</Field>
          <Field label="Ended (UTC)">{shortDate(b.endedAt)}</Field>
          <Field label="Expires (UTC)">{shortDate(b.expiresAt)}</Field>
          <Field label="Output file">
            <span class="mono small">{b.outputFileId ?? "—"}</span>
          </Field>
          <Field label="Error file">
            <span class="mono small">{b.errorFileId ?? "—"}</span>
          </Field>
          <Field label="Metadata">
            {b.metadata === null || Object.keys(b.metadata).length === 0 ? (
              "—"
            ) : (
              <span class="mono small">{JSON.stringify(b.metadata)}</span>
            )}
          </Field>
        </dl>
      </Card>
    </>
  )
}
