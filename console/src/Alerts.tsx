import { useEffect, useState } from "preact/hooks"
import { type AlertDelivery, type Client, type DeliveryStatus, shortDate } from "./api.ts"
import { Empty, ErrorBox, Loading, StatusBadge, useAsync, useInterval } from "./ui.tsx"

/** The table's columns, which an event's own row spans. */
const COLUMNS = 10

/** The newest deliveries shown (the endpoint's default; it allows up to 1000). */
const LIMIT = 100

const FILTERS: ReadonlyArray<[DeliveryStatus | "", string]> = [
  ["", "All"],
  ["pending", "Pending"],
  ["delivered", "Delivered"],
  ["failed", "Failed"]
]

export const AlertsView = ({ api }: { api: Client }) => {
  const [status, setStatus] = useState<DeliveryStatus | "">("")
  return (
    <>
      <div class="page-head">
        <h1>Alerts</h1>
        <span class="muted small">
          Webhook deliveries, newest first, refreshed every 5 seconds. Resend sends the same event, with the same id,
          again.
        </span>
      </div>
      <div class="segmented">
        {FILTERS.map(([value, label]) => (
          <button key={value} type="button" aria-pressed={status === value} onClick={() => setStatus(value)}>
            {label}
          </button>
        ))}
      </div>
      {/* Keyed by the filter: another filter starts from its own loading state, never from the last one's rows. */}
      <Deliveries key={status} api={api} status={status} />
    </>
  )
}

const Deliveries = ({ api, status }: { api: Client; status: DeliveryStatus | "" }) => {
  const deliveries = useAsync(
    () =>
      api.json<{ data: AlertDelivery[] }>(
        `/admin/alerts/deliveries?limit=${LIMIT}${status === "" ? "" : `&status=${status}`}`
      ),
    [status]
  )
  // Deliveries are sent, retried and resent in the background.
  useInterval(deliveries.reload, 5000, deliveries.error === undefined)
  return deliveries.error !== undefined && deliveries.data === undefined ? (
    <ErrorBox error={deliveries.error} retry={deliveries.reload} />
  ) : deliveries.data === undefined ? (
    <Loading label="Loading deliveries…" />
  ) : deliveries.data.data.length === 0 ? (
    <Empty>
      {status === "" ? (
        <>
          No alert has been raised yet. Webhooks are set under <code>alerts:</code> in the operator config, or for an
          account through the admin API.
        </>
      ) : (
        `No ${status} delivery.`
      )}
    </Empty>
  ) : (
    <section class="card deliveries" aria-label="Deliveries">
      {/* A failed refresh stops the polling: say so above the rows it left on screen. */}
      {deliveries.error !== undefined && <ErrorBox error={deliveries.error} retry={deliveries.reload} />}
      <div class="table-wrap">
        <table data-testid="deliveries-table">
          <thead>
            <tr>
              <th>Created (UTC)</th>
              <th>Event</th>
              <th>Account</th>
              <th class="hide-narrow">URL</th>
              <th>Status</th>
              <th class="hide-narrow">Attempts</th>
              <th class="hide-narrow">Last HTTP status</th>
              <th class="hide-narrow">Last error</th>
              <th class="hide-narrow">Delivered (UTC)</th>
              <th>Action</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.data.data.map((d) => (
              <DeliveryRow key={d.id} api={api} delivery={d} onChange={deliveries.reload} />
            ))}
          </tbody>
        </table>
      </div>
      {deliveries.data.data.length >= LIMIT && <p class="muted small">The newest {LIMIT} deliveries are shown.</p>}
    </section>
  )
}

/** A UTC time on two lines, date then time, so that the table stays narrow. */
const When = ({ iso }: { iso: string | null }) => {
  if (iso === null) return <>—</>
  const [day, time] = shortDate(iso).split(" ")
  return (
    <>
      <span class="nowrap">{day}</span> <span class="nowrap">{time}</span>
    </>
  )
}

const DeliveryRow = ({ api, delivery, onChange }: { api: Client; delivery: AlertDelivery; onChange: () => void }) => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const [expanded, setExpanded] = useState(false)
  // The button's answer is shown at once, until the reload it starts brings the whole list.
  const [answer, setAnswer] = useState<{ status: "pending" } | null>(null)
  useEffect(() => setAnswer(null), [delivery])
  // When it was last delivered before the resend: a later delivery is the resent one.
  const [resent, setResent] = useState<{ deliveredBefore: string | null } | null>(null)
  const d: AlertDelivery =
    answer === null ? delivery : { ...delivery, ...answer, attempts: 0, nextAttemptAt: null, deliveredAt: null }
  const resend = async () => {
    setBusy(true)
    setError(undefined)
    try {
      const before = delivery.deliveredAt ?? resent?.deliveredBefore ?? null
      setAnswer(
        await api.json<{ status: "pending" }>(`/admin/alerts/deliveries/${encodeURIComponent(d.id)}/resend`, {
          method: "POST"
        })
      )
      setResent({ deliveredBefore: before })
      onChange()
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  const note =
    resent === null || d.status === "failed"
      ? null
      : d.status === "delivered" && d.deliveredAt !== resent.deliveredBefore
        ? "Sent again."
        : "Queued to be sent again."
  return (
    <>
      <tr
        class={expanded ? "expanded" : undefined}
        data-testid="delivery-row"
        data-delivery={d.id}
        data-event-id={d.eventId}
        data-type={d.type}
        data-status={d.status}
      >
        <td>
          <When iso={d.createdAt} />
        </td>
        <td>
          <button
            type="button"
            class="link disclosure mono nowrap"
            aria-expanded={expanded}
            aria-controls={`event-${d.id}`}
            onClick={() => setExpanded(!expanded)}
          >
            {d.type}
          </button>
        </td>
        <td>
          {d.accountId === null ? (
            <span class="muted">—</span>
          ) : (
            <a class="mono" href={`#/accounts/${d.accountId}`} title={d.accountId}>
              {d.accountId.slice(0, 8)}…
            </a>
          )}
        </td>
        <td class="hide-narrow small url">
          <span class="mono">{d.url}</span>
          <div class="muted">{d.endpoint.startsWith("config:") ? "config file" : "account's webhook"}</div>
        </td>
        <td>
          <StatusBadge status={d.status} />
          {d.nextAttemptAt !== null && (
            <div class="muted small nowrap">next {shortDate(d.nextAttemptAt).slice(11)} UTC</div>
          )}
        </td>
        <td class="num hide-narrow">{d.attempts}</td>
        <td class="num hide-narrow">{d.lastStatus ?? "—"}</td>
        <td class={d.lastError === null ? "hide-narrow" : "hide-narrow small last-error"}>{d.lastError ?? "—"}</td>
        <td class="hide-narrow">
          <When iso={d.deliveredAt} />
        </td>
        <td>
          <button
            type="button"
            class="secondary small-button"
            data-testid={`resend-${d.id}`}
            onClick={resend}
            disabled={busy}
          >
            {busy ? "Resending…" : "Resend"}
          </button>
          {note !== null && (
            <div class="muted small" role="status" data-testid="resend-note">
              {note}
            </div>
          )}
          {error !== undefined && <ErrorBox error={error} />}
        </td>
      </tr>
      {/* The event as the webhook receives it, on a row of its own so that the table keeps its width. */}
      {expanded && (
        <tr class="event-row" id={`event-${d.id}`} data-testid="delivery-event" data-delivery={d.id}>
          <td colSpan={COLUMNS}>
            <div class="muted small">
              Event <span class="mono">{d.eventId}</span>, raised {shortDate(d.event.createdAt)} UTC
              {d.endpoint.startsWith("config:") ? "" : `, for the account's webhook ${d.endpoint}`}:
            </div>
            <pre data-testid="event-data">{JSON.stringify(d.event.data, null, 2)}</pre>
          </td>
        </tr>
      )}
    </>
  )
}
