import { useMemo, useState } from "preact/hooks"
import {
  type Account,
  type CatalogEntry,
  type Client,
  type CreatedKey,
  type KeyInfo,
  type LedgerEntry,
  shortDate,
  type UsageLine,
  type Video
} from "./api.ts"
import { UsageChart } from "./UsageChart.tsx"
import { isRunning, VideoList } from "./Videos.tsx"
import { Card, copyText, Empty, ErrorBox, Loading, Money, navigate, saveBlob, useAsync, useInterval } from "./ui.tsx"

// ---------- accounts ----------

export const AccountsView = ({ api }: { api: Client }) => {
  const [search, setSearch] = useState("")
  const [query, setQuery] = useState("")
  const accounts = useAsync(
    () =>
      api.json<{ data: Account[] }>(`/admin/accounts?limit=200${query ? `&search=${encodeURIComponent(query)}` : ""}`),
    [query]
  )
  const [name, setName] = useState("")
  const [creating, setCreating] = useState(false)
  const [createError, setCreateError] = useState<unknown>(undefined)
  const create = async (event: Event) => {
    event.preventDefault()
    setCreating(true)
    setCreateError(undefined)
    try {
      const account = await api.json<{ id: string }>("/admin/accounts", { body: { name } })
      navigate(`/accounts/${account.id}`)
    } catch (e) {
      setCreateError(e)
    } finally {
      setCreating(false)
    }
  }
  return (
    <>
      <Card title="New account">
        <form class="inline-form" onSubmit={create}>
          <label>
            Name
            <input
              name="account-name"
              required
              maxLength={200}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              placeholder="Acme Inc"
            />
          </label>
          <button type="submit" disabled={creating || name.trim() === ""}>
            {creating ? "Creating…" : "Create account"}
          </button>
        </form>
        {createError !== undefined && <ErrorBox error={createError} />}
      </Card>
      <Card title="Accounts">
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault()
            setQuery(search.trim())
          }}
        >
          <label>
            Search
            <input
              type="search"
              name="search"
              value={search}
              onInput={(e) => setSearch(e.currentTarget.value)}
              placeholder="name or id"
            />
          </label>
          <button type="submit">Search</button>
        </form>
        {accounts.error !== undefined ? (
          <ErrorBox error={accounts.error} retry={accounts.reload} />
        ) : accounts.data === undefined ? (
          <Loading />
        ) : accounts.data.data.length === 0 ? (
          <Empty>{query ? `No account matches “${query}”.` : "No accounts yet: create the first one above."}</Empty>
        ) : (
          <div class="table-wrap">
            <table data-testid="accounts-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Available</th>
                  <th>Held</th>
                  <th class="hide-narrow">Created</th>
                </tr>
              </thead>
              <tbody>
                {accounts.data.data.map((a) => (
                  <tr key={a.id} class="clickable" onClick={() => navigate(`/accounts/${a.id}`)}>
                    <td>
                      <a href={`#/accounts/${a.id}`}>{a.name}</a>
                      <div class="muted small mono">{a.id}</div>
                    </td>
                    <td class="num">
                      <Money value={a.balance.available} />
                    </td>
                    <td class="num">
                      <Money value={a.balance.held} />
                    </td>
                    <td class="hide-narrow">{shortDate(a.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>
    </>
  )
}

// ---------- one account ----------

const TABS = ["overview", "keys", "ledger", "usage", "videos"] as const
type Tab = (typeof TABS)[number]

export const AccountView = ({ api, id, tab }: { api: Client; id: string; tab: Tab }) => {
  const account = useAsync(() => api.json<Account>(`/admin/accounts/${id}`), [id])
  // The balance follows calls made elsewhere (key holders, workers) without a reload.
  useInterval(account.reload, 5000, account.error === undefined)
  if (account.error !== undefined && account.data === undefined) {
    return <ErrorBox error={account.error} retry={account.reload} />
  }
  if (account.data === undefined) return <Loading label="Loading account…" />
  const a = account.data
  return (
    <>
      <div class="page-head">
        <a href="#/accounts" class="link">
          ← Accounts
        </a>
        <h1 data-testid="account-name">{a.name}</h1>
        <span class="muted small mono">{a.id}</span>
      </div>
      <nav class="tabs" aria-label="Account sections">
        {TABS.map((t) => (
          <a key={t} href={`#/accounts/${id}/${t}`} aria-current={t === tab ? "page" : undefined}>
            {t === "keys" ? "API keys" : t[0].toUpperCase() + t.slice(1)}
          </a>
        ))}
      </nav>
      {tab === "overview" && <Overview api={api} account={a} onChange={account.reload} />}
      {tab === "keys" && <KeysSection api={api} accountId={id} />}
      {tab === "ledger" && <LedgerSection api={api} accountId={id} />}
      {tab === "usage" && <UsageSection api={api} accountId={id} />}
      {tab === "videos" && <VideosSection api={api} accountId={id} />}
    </>
  )
}

export const isTab = (value: string | undefined): value is Tab => (TABS as ReadonlyArray<string>).includes(value ?? "")

const BalanceGrid = ({ balance }: { balance: Account["balance"] }) => (
  <dl class="stats" data-testid="balance">
    <div>
      <dt>Available</dt>
      <dd>
        <Money value={balance.available} testId="balance-available" />
      </dd>
    </div>
    <div>
      <dt>Held</dt>
      <dd>
        <Money value={balance.held} testId="balance-held" />
      </dd>
    </div>
    <div>
      <dt>Captured</dt>
      <dd>
        <Money value={balance.captured} testId="balance-captured" />
      </dd>
    </div>
    <div>
      <dt>Deposited</dt>
      <dd>
        <Money value={balance.deposited} testId="balance-deposited" />
      </dd>
    </div>
  </dl>
)

const newReference = () => `console-${new Date().toISOString().replace(/[-:.TZ]/g, "")}`

const Overview = ({ api, account, onChange }: { api: Client; account: Account; onChange: () => void }) => {
  const [amount, setAmount] = useState("")
  const [reference, setReference] = useState(newReference)
  const [busy, setBusy] = useState(false)
  const [result, setResult] = useState<{ ok: string } | { error: unknown } | null>(null)
  const deposit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setResult(null)
    try {
      const r = await api.json<{ amount: string; duplicate: boolean }>(`/admin/accounts/${account.id}/deposits`, {
        body: { amount: amount.trim(), reference: reference.trim() }
      })
      setResult({
        ok: r.duplicate
          ? `Reference “${reference}” was already used: nothing deposited.`
          : `Deposited $${r.amount} (reference ${reference}).`
      })
      setAmount("")
      setReference(newReference())
      onChange()
    } catch (error) {
      setResult({ error })
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <Card title="Balance">
        <BalanceGrid balance={account.balance} />
      </Card>
      <Card title="Deposit">
        <form class="inline-form" onSubmit={deposit}>
          <label>
            Amount (USD)
            <input
              name="amount"
              required
              inputMode="decimal"
              pattern="^[0-9]+(\.[0-9]{1,6})?$"
              title="A positive amount with at most 6 decimals, such as 25.00"
              value={amount}
              onInput={(e) => setAmount(e.currentTarget.value)}
              placeholder="25.00"
            />
          </label>
          <label>
            Reference
            <input name="reference" required value={reference} onInput={(e) => setReference(e.currentTarget.value)} />
          </label>
          <button type="submit" disabled={busy}>
            {busy ? "Depositing…" : "Deposit"}
          </button>
        </form>
        <p class="muted small">The same reference twice deposits once.</p>
        {result !== null &&
          ("ok" in result ? (
            <p class="state state-ok" role="status">
              {result.ok}
            </p>
          ) : (
            <ErrorBox error={result.error} />
          ))}
      </Card>
    </>
  )
}

// ---------- keys ----------

const KeysSection = ({ api, accountId }: { api: Client; accountId: string }) => {
  const keys = useAsync(() => api.json<{ data: KeyInfo[] }>(`/admin/accounts/${accountId}/keys`), [accountId])
  const models = useAsync(() => api.json<{ data: CatalogEntry[] }>("/admin/models"), [])
  const [created, setCreated] = useState<CreatedKey | null>(null)
  return (
    <>
      {created !== null && <NewKey created={created} onDone={() => setCreated(null)} />}
      <Card title="Create an API key">
        <CreateKeyForm
          api={api}
          accountId={accountId}
          models={models.data?.data.map((m) => m.id) ?? []}
          onCreated={(k) => {
            setCreated(k)
            keys.reload()
          }}
        />
      </Card>
      <Card title="API keys">
        {keys.error !== undefined ? (
          <ErrorBox error={keys.error} retry={keys.reload} />
        ) : keys.data === undefined ? (
          <Loading />
        ) : keys.data.data.length === 0 ? (
          <Empty>This account has no API keys yet.</Empty>
        ) : (
          <div class="table-wrap">
            <table data-testid="keys-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Spent / limit</th>
                  <th>Last used</th>
                  <th class="hide-narrow">Models</th>
                  <th class="hide-narrow">Expires</th>
                  <th>Status</th>
                </tr>
              </thead>
              <tbody>
                {keys.data.data.map((k) => (
                  <KeyRow key={k.id} api={api} info={k} onRevoked={keys.reload} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>
    </>
  )
}

const NewKey = ({ created, onDone }: { created: CreatedKey; onDone: () => void }) => {
  const [copied, setCopied] = useState<boolean | null>(null)
  return (
    <section class="card new-key" aria-label="New API key" data-testid="new-key">
      <h2>Key “{created.name}” created</h2>
      <p class="warning" role="alert">
        Copy this key now. It is shown only once: Tollgate stores only its hash and cannot show it again.
      </p>
      <div class="secret-row">
        <code class="secret" data-testid="new-key-value">
          {created.key}
        </code>
        <button type="button" onClick={async () => setCopied(await copyText(created.key))}>
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      {copied === false && <p class="state-error">Copying failed: select the key and copy it by hand.</p>}
      <button type="button" class="secondary" onClick={onDone}>
        I have saved it
      </button>
    </section>
  )
}

const CreateKeyForm = ({
  api,
  accountId,
  models,
  onCreated
}: {
  api: Client
  accountId: string
  models: ReadonlyArray<string>
  onCreated: (key: CreatedKey) => void
}) => {
  const [name, setName] = useState("")
  const [allowed, setAllowed] = useState<ReadonlyArray<string>>([])
  const [expires, setExpires] = useState("")
  const [limit, setLimit] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      const body = {
        name: name.trim(),
        ...(allowed.length > 0 ? { models: allowed } : {}),
        ...(expires ? { expiresAt: new Date(`${expires}T23:59:59Z`).toISOString() } : {}),
        ...(limit.trim() ? { spendLimit: limit.trim() } : {})
      }
      onCreated(await api.json<CreatedKey>(`/admin/accounts/${accountId}/keys`, { body }))
      setName("")
      setAllowed([])
      setExpires("")
      setLimit("")
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="stack-form" onSubmit={submit}>
      <label>
        Name
        <input
          name="key-name"
          required
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
          placeholder="laptop"
        />
      </label>
      <label>
        Allowed models <span class="muted small">(none selected: every model)</span>
        <select
          name="key-models"
          multiple
          size={Math.min(6, Math.max(2, models.length))}
          onChange={(e) => setAllowed([...e.currentTarget.selectedOptions].map((o) => o.value))}
        >
          {models.map((m) => (
            <option key={m} value={m} selected={allowed.includes(m)}>
              {m}
            </option>
          ))}
        </select>
      </label>
      <div class="row">
        <label>
          Expires on <span class="muted small">(end of day, UTC)</span>
          <input type="date" name="key-expires" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
        </label>
        <label>
          Spend limit (USD)
          <input
            name="key-limit"
            inputMode="decimal"
            pattern="^[0-9]+(\.[0-9]{1,6})?$"
            value={limit}
            onInput={(e) => setLimit(e.currentTarget.value)}
            placeholder="no limit"
          />
        </label>
      </div>
      <button type="submit" disabled={busy}>
        {busy ? "Creating…" : "Create key"}
      </button>
      {error !== undefined && <ErrorBox error={error} />}
    </form>
  )
}

const KeyRow = ({ api, info, onRevoked }: { api: Client; info: KeyInfo; onRevoked: () => void }) => {
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const revoke = async () => {
    try {
      await api.json(`/admin/keys/${info.id}`, { method: "DELETE" })
      setConfirming(false)
      onRevoked()
    } catch (e) {
      setError(e)
    }
  }
  const expired = info.expiresAt !== null && info.expiresAt < new Date().toISOString()
  return (
    <tr data-testid="key-row" data-key-name={info.name}>
      <td>
        {info.name}
        <div class="muted small mono">{info.prefix}</div>
      </td>
      <td class="num">
        <Money value={info.spent} testId="key-spent" /> /{" "}
        {info.spendLimit === null ? "no limit" : <Money value={info.spendLimit} />}
      </td>
      <td>{shortDate(info.lastUsedAt)}</td>
      <td class="hide-narrow">{info.models === null ? "all" : info.models.join(", ")}</td>
      <td class="hide-narrow">{shortDate(info.expiresAt)}</td>
      <td>
        {info.revokedAt !== null ? (
          <span class="badge badge-failed">revoked</span>
        ) : expired ? (
          <span class="badge badge-failed">expired</span>
        ) : confirming ? (
          <span class="confirm" role="alertdialog" aria-label="Confirm revocation">
            Revoke “{info.name}”? Calls with it fail at once.{" "}
            <button type="button" class="danger" onClick={revoke}>
              Yes, revoke
            </button>{" "}
            <button type="button" class="secondary" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        ) : (
          <>
            <span class="badge badge-completed">active</span>{" "}
            <button type="button" class="danger small-button" onClick={() => setConfirming(true)}>
              Revoke
            </button>
          </>
        )}
        {error !== undefined && <ErrorBox error={error} />}
      </td>
    </tr>
  )
}

// ---------- ledger ----------

const PAGE = 25
const MAX_ENTRIES = 20_000

/** Settlement and refund events name only their hold: they take the key and model from its HoldPlaced. */
const withHoldContext = (entries: ReadonlyArray<LedgerEntry>): LedgerEntry[] => {
  const holds = new Map<string, LedgerEntry>()
  for (const e of entries) if (e.type === "HoldPlaced" && e.holdId !== null) holds.set(e.holdId, e)
  return entries.map((e) => {
    const hold = e.holdId === null ? undefined : holds.get(e.holdId)
    return hold === undefined ? e : { ...e, keyId: e.keyId ?? hold.keyId, model: e.model ?? hold.model }
  })
}

/** Every entry of the account, following `next` (oldest first); filtering and paging happen on this list. */
const loadLedger = async (api: Client, accountId: string) => {
  const all: LedgerEntry[] = []
  let after = 0
  for (;;) {
    const page = await api.json<{ data: LedgerEntry[]; next: number | null }>(
      `/admin/accounts/${accountId}/ledger?limit=1000&after=${after}`
    )
    all.push(...page.data)
    if (page.next === null || all.length >= MAX_ENTRIES)
      return { entries: withHoldContext(all), truncated: page.next !== null }
    after = page.next
  }
}

const csvCell = (value: unknown) => {
  const text = value === null || value === undefined ? "" : String(value)
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

const downloadCsv = (rows: ReadonlyArray<LedgerEntry>, accountId: string) => {
  const header = ["position", "globalPosition", "at", "type", "amount", "keyId", "model", "holdId", "requestId"]
  const lines = [
    header.join(","),
    ...rows.map((r) =>
      [r.position, r.globalPosition, r.at, r.type, r.amount, r.keyId, r.model, r.holdId, r.requestId]
        .map(csvCell)
        .join(",")
    )
  ]
  saveBlob(new Blob([`${lines.join("\r\n")}\r\n`], { type: "text/csv" }), `ledger-${accountId}.csv`)
}

const LedgerSection = ({ api, accountId }: { api: Client; accountId: string }) => {
  const ledger = useAsync(() => loadLedger(api, accountId), [accountId])
  const keys = useAsync(() => api.json<{ data: KeyInfo[] }>(`/admin/accounts/${accountId}/keys`), [accountId])
  const [type, setType] = useState("")
  const [keyId, setKeyId] = useState("")
  const [model, setModel] = useState("")
  const [from, setFrom] = useState("")
  const [to, setTo] = useState("")
  const [page, setPage] = useState(0)
  const entries = ledger.data?.entries ?? []
  const types = useMemo(() => [...new Set(entries.map((e) => e.type))].sort(), [entries])
  const models = useMemo(() => [...new Set(entries.flatMap((e) => (e.model ? [e.model] : [])))].sort(), [entries])
  const keyName = (id: string | null) =>
    id === null ? "—" : (keys.data?.data.find((k) => k.id === id)?.name ?? id.slice(0, 8))
  // Newest first on screen; dates compare as ISO strings (to is inclusive of the whole day).
  const filtered = useMemo(
    () =>
      entries
        .filter(
          (e) =>
            (type === "" || e.type === type) &&
            (keyId === "" || e.keyId === keyId) &&
            (model === "" || e.model === model) &&
            (from === "" || e.at >= from) &&
            (to === "" || e.at.slice(0, 10) <= to)
        )
        .reverse(),
    [entries, type, keyId, model, from, to]
  )
  const pages = Math.max(1, Math.ceil(filtered.length / PAGE))
  const current = Math.min(page, pages - 1)
  const shown = filtered.slice(current * PAGE, current * PAGE + PAGE)
  const set = (setter: (v: string) => void) => (e: Event) => {
    setter((e.currentTarget as HTMLInputElement).value)
    setPage(0)
  }
  return (
    <Card
      title="Ledger"
      actions={
        <div class="actions">
          <button type="button" class="secondary" onClick={ledger.reload} disabled={ledger.loading}>
            {ledger.loading ? "Refreshing…" : "Refresh"}
          </button>
          <button type="button" onClick={() => downloadCsv(filtered, accountId)} disabled={filtered.length === 0}>
            Export CSV
          </button>
        </div>
      }
    >
      <form class="filters" aria-label="Ledger filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Type
          <select name="filter-type" value={type} onChange={set(setType)}>
            <option value="">all</option>
            {types.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Key
          <select name="filter-key" value={keyId} onChange={set(setKeyId)}>
            <option value="">all</option>
            {(keys.data?.data ?? []).map((k) => (
              <option key={k.id} value={k.id}>
                {k.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Model
          <select name="filter-model" value={model} onChange={set(setModel)}>
            <option value="">all</option>
            {models.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
        <label>
          From
          <input type="date" name="filter-from" value={from} onInput={set(setFrom)} />
        </label>
        <label>
          To
          <input type="date" name="filter-to" value={to} onInput={set(setTo)} />
        </label>
      </form>
      {ledger.error !== undefined ? (
        <ErrorBox error={ledger.error} retry={ledger.reload} />
      ) : ledger.data === undefined ? (
        <Loading label="Loading ledger…" />
      ) : filtered.length === 0 ? (
        <Empty>{entries.length === 0 ? "No ledger entries yet." : "No entry matches these filters."}</Empty>
      ) : (
        <>
          <div class="table-wrap">
            <table data-testid="ledger-table">
              <thead>
                <tr>
                  <th>#</th>
                  <th>When (UTC)</th>
                  <th>Type</th>
                  <th>Amount</th>
                  <th>Key</th>
                  <th>Model</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((e) => (
                  <tr key={e.position} data-testid="ledger-row" data-type={e.type}>
                    <td class="num">{e.position}</td>
                    <td>{shortDate(e.at)}</td>
                    <td>{e.type}</td>
                    <td class="num">
                      <Money value={e.amount} />
                    </td>
                    <td>{keyName(e.keyId)}</td>
                    <td>{e.model ?? "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label="Ledger pages">
            <button type="button" class="secondary" disabled={current === 0} onClick={() => setPage(current - 1)}>
              Newer
            </button>
            <span>
              Page {current + 1} of {pages} · {filtered.length} entries
              {ledger.data.truncated && ` (the newest beyond ${MAX_ENTRIES} are not loaded)`}
            </span>
            <button
              type="button"
              class="secondary"
              disabled={current >= pages - 1}
              onClick={() => setPage(current + 1)}
            >
              Older
            </button>
          </nav>
        </>
      )}
    </Card>
  )
}

// ---------- usage, videos ----------

const UsageSection = ({ api, accountId }: { api: Client; accountId: string }) => {
  const usage = useAsync(
    () => api.json<{ data: UsageLine[] }>(`/admin/usage?accountId=${accountId}&groupBy=day,model`),
    [accountId]
  )
  useInterval(usage.reload, 10_000, usage.error === undefined)
  return (
    <Card title="Usage by day and model">
      {usage.error !== undefined ? (
        <ErrorBox error={usage.error} retry={usage.reload} />
      ) : usage.data === undefined ? (
        <Loading />
      ) : (
        <UsageChart lines={usage.data.data} />
      )}
    </Card>
  )
}

const VideosSection = ({ api, accountId }: { api: Client; accountId: string }) => {
  const videos = useAsync(
    () => api.json<{ data: Video[] }>(`/admin/accounts/${accountId}/videos?limit=50`),
    [accountId]
  )
  useInterval(videos.reload, 2000, isRunning(videos.data?.data))
  return (
    <Card title="Video tasks">
      {videos.error !== undefined ? (
        <ErrorBox error={videos.error} retry={videos.reload} />
      ) : videos.data === undefined ? (
        <Loading />
      ) : (
        <VideoList
          api={api}
          videos={videos.data.data}
          contentPath={(id) => `/admin/accounts/${accountId}/videos/${id}/content`}
        />
      )}
    </Card>
  )
}

// ---------- catalog, integrity ----------

const PRICE_UNITS: Record<string, string> = {
  input: "per 1M input tokens",
  output: "per 1M output tokens",
  perCall: "per call",
  perSecond: "per second of audio",
  perMillionCharacters: "per 1M characters"
}

export const ModelsView = ({ api }: { api: Client }) => {
  const models = useAsync(() => api.json<{ data: CatalogEntry[] }>("/admin/models"), [])
  return (
    <Card title="Model catalog">
      {models.error !== undefined ? (
        <ErrorBox error={models.error} retry={models.reload} />
      ) : models.data === undefined ? (
        <Loading />
      ) : models.data.data.length === 0 ? (
        <Empty>No models are configured.</Empty>
      ) : (
        <div class="table-wrap">
          <table data-testid="models-table">
            <thead>
              <tr>
                <th>Model</th>
                <th>Kind</th>
                <th>Prices (USD)</th>
                <th class="hide-narrow">Endpoint</th>
              </tr>
            </thead>
            <tbody>
              {models.data.data.map((m) => (
                <tr key={m.id}>
                  <td class="mono">{m.id}</td>
                  <td>{m.kind ?? "—"}</td>
                  <td>
                    {Object.entries(m.pricing).map(([k, v]) => (
                      <div key={k}>
                        <Money value={v} /> <span class="muted small">{PRICE_UNITS[k] ?? k}</span>
                      </div>
                    ))}
                  </td>
                  <td class="hide-narrow mono small">{m.endpoint ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Card>
  )
}

const Action = ({ api, title, path, describe }: { api: Client; title: string; path: string; describe: string }) => {
  const [state, setState] = useState<{
    busy: boolean
    result?: { ok?: boolean } & Record<string, unknown>
    error?: unknown
  }>({
    busy: false
  })
  const run = async () => {
    setState({ busy: true })
    try {
      setState({ busy: false, result: await api.json(path, { method: "POST" }) })
    } catch (error) {
      setState({ busy: false, error })
    }
  }
  return (
    <Card title={title}>
      <p class="muted">{describe}</p>
      <button type="button" onClick={run} disabled={state.busy}>
        {state.busy ? "Running…" : `Run ${title.toLowerCase()}`}
      </button>
      {state.busy && <Loading label="Working: this reads every event…" />}
      {state.error !== undefined && <ErrorBox error={state.error} />}
      {state.result !== undefined && (
        <div class="result" data-testid={`result-${path.split("/").pop()}`}>
          <p class={state.result.ok ? "state state-ok" : "state state-error"}>
            {state.result.ok ? "OK: no mismatch found." : "Problems found: see the report."}
          </p>
          <pre>{JSON.stringify(state.result, null, 2)}</pre>
        </div>
      )}
    </Card>
  )
}

export const IntegrityView = ({ api }: { api: Client }) => (
  <>
    <Action
      api={api}
      title="Replay verify"
      path="/admin/replay"
      describe="Rebuilds every projection from the events in a scratch schema and compares it with the live tables, row by row."
    />
    <Action
      api={api}
      title="Audit verify"
      path="/admin/audit/verify"
      describe="Recomputes every stream's hash chain and the global chain through every checkpoint."
    />
  </>
)
