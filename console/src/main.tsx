import { render } from "preact"
import { useMemo, useState } from "preact/hooks"
import { client, loadSession, type Role, type Session, saveSession } from "./api.ts"
import { AlertsView } from "./Alerts.tsx"
import { HolderBatches } from "./Batches.tsx"
import { BalanceCard, HolderOverview, HolderVideos, Playground, useKeyBalance } from "./Holder.tsx"
import { AccountsView, AccountView, IntegrityView, isTab, ModelsView } from "./Operator.tsx"
import { OperatorBatchesView, OperatorBatchView } from "./OperatorBatches.tsx"
import { ErrorBox, navigate, useRoute } from "./ui.tsx"
import { UpstreamsView } from "./Upstreams.tsx"
import "./styles.css"

const Login = ({ onLogin }: { onLogin: (s: Session) => void }) => {
  const [role, setRole] = useState<Role>("operator")
  const [secret, setSecret] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    const trimmed = secret.trim()
    try {
      // Checks the secret against the endpoint this role will use, so a wrong one is caught here.
      await client(trimmed).json(role === "operator" ? "/admin/accounts?limit=1" : "/v1/balance")
      setSecret("")
      navigate("/")
      onLogin({ role, secret: trimmed })
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="login">
      <h1>Tollgate console</h1>
      <form class="card stack-form" onSubmit={submit}>
        <fieldset class="segmented">
          <legend>Sign in as</legend>
          <label>
            <input type="radio" name="role" checked={role === "operator"} onChange={() => setRole("operator")} />
            Operator
          </label>
          <label>
            <input type="radio" name="role" checked={role === "holder"} onChange={() => setRole("holder")} />
            Key holder
          </label>
        </fieldset>
        <label>
          {role === "operator" ? "Admin token" : "API key"}
          <input
            type="password"
            name="secret"
            autoComplete="off"
            required
            value={secret}
            onInput={(e) => setSecret(e.currentTarget.value)}
            placeholder={role === "operator" ? "contents of data/admin-token" : "sk-…"}
          />
        </label>
        <button type="submit" disabled={busy || secret.trim() === ""}>
          {busy ? "Checking…" : "Sign in"}
        </button>
        {error !== undefined && <ErrorBox error={error} />}
        <p class="muted small">
          The secret is kept in this tab's session storage only and sent in the Authorization header.
        </p>
      </form>
    </main>
  )
}

const Shell = ({
  session,
  onLogout,
  links,
  children
}: {
  session: Session
  onLogout: () => void
  links: ReadonlyArray<[string, string]>
  children: preact.ComponentChildren
}) => {
  const path = useRoute()
  return (
    <>
      <header class="topbar">
        <a class="brand" href="#/">
          Tollgate
        </a>
        <nav aria-label="Main">
          {links.map(([href, label]) => (
            <a
              key={href}
              href={`#${href}`}
              aria-current={path === href || (href !== "/" && path.startsWith(href)) ? "page" : undefined}
            >
              {label}
            </a>
          ))}
        </nav>
        <span class="who">{session.role === "operator" ? "Operator" : "Key holder"}</span>
        <button type="button" class="secondary small-button" onClick={onLogout}>
          Sign out
        </button>
      </header>
      <main class="content">{children}</main>
    </>
  )
}

const OperatorApp = ({ session, onLogout }: { session: Session; onLogout: () => void }) => {
  const api = useMemo(() => client(session.secret), [session.secret])
  const path = useRoute()
  const parts = path.split("/").filter(Boolean)
  let page: preact.ComponentChildren
  if (parts[0] === "accounts" && parts[1]) {
    page = <AccountView api={api} id={parts[1]} tab={isTab(parts[2]) ? parts[2] : "overview"} />
  } else if (parts[0] === "batches" && parts[1]) {
    page = <OperatorBatchView api={api} id={decodeURIComponent(parts[1])} />
  } else if (parts[0] === "batches") page = <OperatorBatchesView api={api} />
  else if (parts[0] === "models") page = <ModelsView api={api} />
  else if (parts[0] === "upstreams") page = <UpstreamsView api={api} />
  else if (parts[0] === "alerts") page = <AlertsView api={api} />
  else if (parts[0] === "integrity") page = <IntegrityView api={api} />
  else page = <AccountsView api={api} />
  return (
    <Shell
      session={session}
      onLogout={onLogout}
      links={[
        ["/accounts", "Accounts"],
        ["/batches", "Batches"],
        ["/models", "Models"],
        ["/upstreams", "Upstreams"],
        ["/alerts", "Alerts"],
        ["/integrity", "Integrity"]
      ]}
    >
      {page}
    </Shell>
  )
}

const HolderApp = ({ session, onLogout }: { session: Session; onLogout: () => void }) => {
  const api = useMemo(() => client(session.secret), [session.secret])
  const balance = useKeyBalance(api)
  const path = useRoute()
  return (
    <Shell
      session={session}
      onLogout={onLogout}
      links={[
        ["/", "Overview"],
        ["/playground", "Playground"],
        ["/videos", "Videos"],
        ["/batches", "Batches"]
      ]}
    >
      {path === "/playground" ? (
        <>
          <BalanceCard balance={balance} />
          <Playground api={api} balance={balance} />
        </>
      ) : path === "/videos" ? (
        <HolderVideos api={api} />
      ) : path === "/batches" ? (
        <HolderBatches api={api} />
      ) : (
        <HolderOverview api={api} balance={balance} />
      )}
    </Shell>
  )
}

const App = () => {
  const [session, setSession] = useState<Session | null>(loadSession)
  const login = (s: Session) => {
    saveSession(s)
    setSession(s)
  }
  const logout = () => {
    saveSession(null)
    setSession(null)
    navigate("/")
  }
  if (session === null) return <Login onLogin={login} />
  return session.role === "operator" ? (
    <OperatorApp session={session} onLogout={logout} />
  ) : (
    <HolderApp session={session} onLogout={logout} />
  )
}

render(<App />, document.getElementById("app") as HTMLElement)
