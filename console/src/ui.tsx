import type { ComponentChildren } from "preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { ApiFailure } from "./api.ts"

export const Loading = ({ label = "Loading…" }: { label?: string }) => (
  <div class="state state-loading" role="status" aria-live="polite">
    <span class="spinner" aria-hidden="true" />
    {label}
  </div>
)

export const ErrorBox = ({ error, retry }: { error: unknown; retry?: () => void }) => {
  const message = error instanceof Error ? error.message : String(error)
  const status = error instanceof ApiFailure && error.status > 0 ? ` (${error.status})` : ""
  return (
    <div class="state state-error" role="alert">
      <strong>Something went wrong{status}.</strong> <span class="error-message">{message}</span>
      {retry && (
        <button type="button" class="link" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  )
}

export const Empty = ({ children }: { children: ComponentChildren }) => <div class="state state-empty">{children}</div>

export const Card = ({
  title,
  children,
  actions,
  wide
}: {
  title: string
  children: ComponentChildren
  actions?: ComponentChildren
  /** Holds a table wider than the page: the card keeps the page's width and the table scrolls inside it. */
  wide?: boolean
}) => (
  <section class={wide ? "card wide" : "card"} aria-label={title}>
    <header class="card-head">
      <h2>{title}</h2>
      {actions}
    </header>
    {children}
  </section>
)

export const Money = ({ value, testId }: { value: string | null | undefined; testId?: string }) => (
  <span class="money" data-testid={testId}>
    {value == null ? "—" : `$${value}`}
  </span>
)

export interface Async<T> {
  readonly data: T | undefined
  readonly error: unknown
  readonly loading: boolean
  reload(): void
}

/** Loads on mount and when `deps` change; `reload` refetches while keeping the last data on screen. */
export const useAsync = <T,>(load: () => Promise<T>, deps: ReadonlyArray<unknown>): Async<T> => {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true
  })
  const generation = useRef(0)
  const run = useCallback(() => {
    const mine = ++generation.current
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (data) => mine === generation.current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => mine === generation.current && setState((s) => ({ data: s.data, error, loading: false }))
    )
  }, deps)
  useEffect(run, [run])
  return { ...state, reload: run }
}

/** Calls `tick` every `ms` while `active`. */
export const useInterval = (tick: () => void, ms: number, active: boolean) => {
  const saved = useRef(tick)
  saved.current = tick
  useEffect(() => {
    if (!active) return
    const id = setInterval(() => saved.current(), ms)
    return () => clearInterval(id)
  }, [ms, active])
}

/** The current location hash as a path ("#/accounts/x" → "/accounts/x"). */
export const useRoute = () => {
  const [path, setPath] = useState(() => location.hash.slice(1) || "/")
  useEffect(() => {
    const onChange = () => setPath(location.hash.slice(1) || "/")
    addEventListener("hashchange", onChange)
    return () => removeEventListener("hashchange", onChange)
  }, [])
  return path
}

export const navigate = (path: string) => {
  location.hash = path
}

/** Copies with the Clipboard API, falling back to a selected textarea for older browsers. */
export const copyText = async (text: string) => {
  try {
    await navigator.clipboard.writeText(text)
    return true
  } catch {
    const area = document.createElement("textarea")
    area.value = text
    document.body.append(area)
    area.select()
    const ok = document.execCommand("copy")
    area.remove()
    return ok
  }
}

export const StatusBadge = ({ status }: { status: string }) => (
  <span class={`badge badge-${status}`}>{status.replace("_", " ")}</span>
)

/** Hands `blob` to the browser as a download named `name` (from a blob: URL, so no secret goes in a URL). */
export const saveBlob = (blob: Blob, name: string) => {
  const link = document.createElement("a")
  link.href = URL.createObjectURL(blob)
  link.download = name
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(link.href), 1000)
}
