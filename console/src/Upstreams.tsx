import { useEffect, useState } from "preact/hooks"
import { type Client, type DeploymentStatus, shortDate, type UpstreamStatus } from "./api.ts"
import { Empty, ErrorBox, Loading, StatusBadge, useAsync, useInterval } from "./ui.tsx"

const percent = (rate: number) => `${(rate * 100).toFixed(1)}%`
const millis = (value: number | null) => (value === null ? "—" : String(Math.round(value)))

const OUTCOMES: ReadonlyArray<[Exclude<keyof DeploymentStatus["requests"], "total">, string]> = [
  ["success", "succeeded"],
  ["rate_limited", "rate limited"],
  ["failed", "failed"],
  ["auth", "refused credentials"],
  ["rejected", "rejected"],
  ["cancelled", "cancelled"]
]

export const UpstreamsView = ({ api }: { api: Client }) => {
  const upstreams = useAsync(() => api.json<{ data: UpstreamStatus[] }>("/admin/upstreams"), [])
  // Health, cooldowns and counts move with live traffic.
  useInterval(upstreams.reload, 5000, upstreams.error === undefined)
  return (
    <>
      <div class="page-head">
        <h1>Upstreams</h1>
        <span class="muted small">
          Health and counts as this gateway instance sees them, refreshed every 5 seconds. A disabled upstream takes no
          traffic until it is enabled again.
        </span>
      </div>
      {upstreams.error !== undefined && upstreams.data === undefined ? (
        <ErrorBox error={upstreams.error} retry={upstreams.reload} />
      ) : upstreams.data === undefined ? (
        <Loading label="Loading upstreams…" />
      ) : upstreams.data.data.length === 0 ? (
        <Empty>No upstreams are configured.</Empty>
      ) : (
        <>
          {/* A failed refresh stops the polling: say so above the figures it left on screen. */}
          {upstreams.error !== undefined && <ErrorBox error={upstreams.error} retry={upstreams.reload} />}
          {upstreams.data.data.map((u) => (
            <UpstreamSection key={u.name} api={api} upstream={u} onChange={upstreams.reload} />
          ))}
        </>
      )}
    </>
  )
}

const UpstreamSection = ({
  api,
  upstream,
  onChange
}: {
  api: Client
  upstream: UpstreamStatus
  onChange: () => void
}) => {
  const [confirming, setConfirming] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  // The button's answer is shown at once, until the reload it starts brings the whole list.
  const [answer, setAnswer] = useState<UpstreamStatus | null>(null)
  useEffect(() => setAnswer(null), [upstream])
  const u = answer ?? upstream
  const toggle = async (enable: boolean) => {
    setBusy(true)
    setError(undefined)
    try {
      const path = `/admin/upstreams/${encodeURIComponent(u.name)}/${enable ? "enable" : "disable"}`
      setAnswer(await api.json<UpstreamStatus>(path, { method: "POST" }))
      setConfirming(false)
      onChange()
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section
      class="card upstream"
      aria-label={`Upstream ${u.name}`}
      data-testid={`upstream-${u.name}`}
      data-state={u.state}
    >
      <header class="card-head">
        <h2 class="upstream-title">
          <span class="mono">{u.name}</span> <span class="muted small">{u.protocol}</span>{" "}
          <StatusBadge status={u.state} />
        </h2>
        {u.state === "disabled" ? (
          <button type="button" onClick={() => toggle(true)} disabled={busy}>
            {busy ? "Enabling…" : "Enable"}
          </button>
        ) : confirming ? (
          <span class="confirm" role="alertdialog" aria-label="Confirm disabling">
            Disable “{u.name}”? Its deployments take no traffic until it is enabled again.{" "}
            <button type="button" class="danger" onClick={() => toggle(false)} disabled={busy}>
              {busy ? "Disabling…" : "Yes, disable"}
            </button>{" "}
            <button type="button" class="secondary" onClick={() => setConfirming(false)} disabled={busy}>
              Cancel
            </button>
          </span>
        ) : (
          <button type="button" class="danger small-button" onClick={() => setConfirming(true)}>
            Disable
          </button>
        )}
      </header>
      {u.disabled !== null && <DisabledNotice disabled={u.disabled} />}
      {error !== undefined && <ErrorBox error={error} />}
      {u.deployments.length === 0 ? (
        <Empty>No model is served by this upstream.</Empty>
      ) : (
        <DeploymentsTable name={u.name} deployments={u.deployments} />
      )}
    </section>
  )
}

const DisabledNotice = ({ disabled }: { disabled: NonNullable<UpstreamStatus["disabled"]> }) =>
  disabled.reason === "auth" ? (
    <div class="state state-error upstream-disabled" role="alert" data-testid="upstream-disabled" data-reason="auth">
      <strong>Disabled: {disabled.message.replace(/\.$/, "")}.</strong> It has taken no traffic since{" "}
      {shortDate(disabled.at)} UTC and stays out until it is enabled here: check its API key first.
    </div>
  ) : (
    <div class="state state-warn upstream-disabled" data-testid="upstream-disabled" data-reason={disabled.reason}>
      <strong>Disabled</strong> since {shortDate(disabled.at)} UTC: {disabled.message}.
    </div>
  )

const DeploymentsTable = ({ name, deployments }: { name: string; deployments: ReadonlyArray<DeploymentStatus> }) => (
  <div class="table-wrap">
    <table data-testid={`deployments-${name}`}>
      <thead>
        <tr>
          <th>Model</th>
          <th class="hide-narrow">Upstream model</th>
          <th class="hide-narrow">Priority</th>
          <th class="hide-narrow">Weight</th>
          <th>State</th>
          <th>In flight</th>
          <th>Requests</th>
          <th>Error rate</th>
          <th class="hide-narrow">Latency p50 / p99</th>
          <th class="hide-narrow">Last error</th>
        </tr>
      </thead>
      <tbody>
        {deployments.map((d) => (
          <DeploymentRow key={`${d.model}/${d.id}`} deployment={d} />
        ))}
      </tbody>
    </table>
  </div>
)

const DeploymentRow = ({ deployment: d }: { deployment: DeploymentStatus }) => {
  const limits = [d.rpm === null ? null : `${d.rpm} rpm`, d.tpm === null ? null : `${d.tpm} tpm`].filter(Boolean)
  const problems = OUTCOMES.filter(([k]) => k !== "success" && d.requests[k] > 0)
  return (
    <tr data-testid="deployment-row" data-deployment={d.id} data-model={d.model} data-state={d.state}>
      <td>
        <span class="mono nowrap">{d.model}</span>
        {limits.length > 0 && <div class="muted small">{limits.join(" · ")}</div>}
      </td>
      <td class="mono nowrap hide-narrow">{d.upstreamModel}</td>
      <td class="num hide-narrow">{d.priority}</td>
      <td class="num hide-narrow">{d.weight}</td>
      <td>
        <StatusBadge status={d.state} />
        {d.until !== null && (d.state === "cooling" || d.state === "open") && (
          <div class="muted small nowrap">until {shortDate(d.until).slice(11)} UTC</div>
        )}
        {d.failuresInARow > 0 && (
          <div class="muted small">
            {d.failuresInARow} failure{d.failuresInARow === 1 ? "" : "s"} in a row
          </div>
        )}
      </td>
      <td class="num">
        {d.inFlight}
        {d.maxConcurrency !== null && <span class="muted"> / {d.maxConcurrency}</span>}
      </td>
      <td class="num" title={OUTCOMES.map(([k, label]) => `${d.requests[k]} ${label}`).join(", ")}>
        {d.requests.total}
        {problems.map(([k, label]) => (
          <div key={k} class="muted small">
            {d.requests[k]} {label}
          </div>
        ))}
      </td>
      <td class="num">{percent(d.errorRate)}</td>
      <td class="num hide-narrow">
        {d.latencyMs.p50 === null ? "—" : `${millis(d.latencyMs.p50)} / ${millis(d.latencyMs.p99)} ms`}
      </td>
      {d.lastError === null ? (
        <td class="hide-narrow">—</td>
      ) : (
        <td class="hide-narrow small last-error">
          {d.lastError.message}
          <div class="muted">{shortDate(d.lastError.at)} UTC</div>
        </td>
      )}
    </tr>
  )
}
