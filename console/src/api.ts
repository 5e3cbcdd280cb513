/**
 * The console's only way to the gateway: the same admin and /v1 endpoints scripts use, with the secret in the
 * Authorization header (never in a URL). The secret lives in sessionStorage for the tab's life, nowhere else.
 */

export type Role = "operator" | "holder"

export interface Session {
  readonly role: Role
  readonly secret: string
}

const SESSION_KEY = "tollgate.console.session"

export const loadSession = (): Session | null => {
  const raw = sessionStorage.getItem(SESSION_KEY)
  if (raw === null) return null
  try {
    const parsed = JSON.parse(raw) as Session
    return parsed.role === "operator" || parsed.role === "holder" ? parsed : null
  } catch {
    return null
  }
}

export const saveSession = (session: Session | null) => {
  if (session === null) sessionStorage.removeItem(SESSION_KEY)
  else sessionStorage.setItem(SESSION_KEY, JSON.stringify(session))
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null
  ) {
    super(message)
  }
}

const failureOf = async (response: Response): Promise<ApiFailure> => {
  let message = `${response.status} ${response.statusText}`
  let code: string | null = null
  try {
    const body = (await response.json()) as { error?: { message?: string; code?: string | null } }
    if (body.error?.message) message = body.error.message
    code = body.error?.code ?? null
  } catch {
    // not JSON: keep the status line
  }
  return new ApiFailure(response.status, message, code)
}

export interface Client {
  json<T>(path: string, init?: { method?: string; body?: unknown }): Promise<T>
  blob(path: string): Promise<Blob>
}

export const client = (secret: string): Client => {
  const request = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    let response: Response
    try {
      response = await fetch(path, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: {
          authorization: `Bearer ${secret}`,
          ...(init.body === undefined ? {} : { "content-type": "application/json" })
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        credentials: "omit",
        cache: "no-store"
      })
    } catch {
      throw new ApiFailure(0, "the gateway cannot be reached", "network_error")
    }
    if (!response.ok) throw await failureOf(response)
    return response
  }
  return {
    json: async <T>(path: string, init?: { method?: string; body?: unknown }) => {
      const response = await request(path, init)
      try {
        return (await response.json()) as T
      } catch {
        throw new ApiFailure(response.status, `unexpected answer from ${path.split("?")[0]}: not JSON`, "bad_response")
      }
    },
    blob: async (path: string) => (await request(path)).blob()
  }
}

// ---- wire shapes (money is always a decimal string) ----

export interface Balance {
  readonly deposited: string
  readonly captured: string
  readonly held: string
  readonly available: string
}
export interface Account {
  readonly id: string
  readonly name: string
  readonly createdAt: string
  readonly balance: Balance
}
export interface KeyInfo {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly createdAt: string
  readonly lastUsedAt: string | null
  readonly expiresAt: string | null
  readonly models: ReadonlyArray<string> | null
  readonly spendLimit: string | null
  readonly spent: string
  readonly held: string
  readonly revokedAt: string | null
}
export interface CreatedKey extends KeyInfo {
  readonly key: string
}
export interface LedgerEntry {
  readonly position: number
  readonly globalPosition: number
  readonly type: string
  readonly amount: string | null
  readonly holdId: string | null
  readonly requestId: string | null
  readonly keyId: string | null
  readonly model: string | null
  readonly at: string
  readonly data: Record<string, unknown>
}
export interface UsageLine {
  readonly day?: string
  readonly model?: string
  readonly requests: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly images: number
  readonly videoSeconds: number
  readonly cost: string
}
export interface Video {
  readonly id: string
  readonly model: string
  readonly status: "queued" | "in_progress" | "completed" | "failed"
  readonly progress: number
  readonly created_at: number
  readonly completed_at: number | null
  readonly prompt: string
  readonly size: string
  readonly seconds: string
  readonly error: { readonly code: string; readonly message: string } | null
  readonly charge: {
    readonly held: string
    readonly captured: string | null
    readonly refunded: string | null
    readonly video_tokens?: number
  }
}
export interface CatalogEntry {
  readonly id: string
  readonly kind: string | null
  readonly endpoint: string | null
  readonly plugin: string | null
  readonly ownedBy: string
  readonly pricing: Record<string, string>
}
export type DeploymentState = "healthy" | "cooling" | "open" | "half_open" | "disabled"
export interface DeploymentStatus {
  readonly id: string
  readonly model: string
  readonly upstream: string
  readonly upstreamModel: string
  readonly weight: number
  readonly priority: number
  readonly maxConcurrency: number | null
  readonly rpm: number | null
  readonly tpm: number | null
  readonly state: DeploymentState
  /** When a cooldown or an open circuit ends, else null. */
  readonly until: string | null
  readonly failuresInARow: number
  /** The answering instance's count, not the cluster's. */
  readonly inFlight: number
  readonly requests: {
    readonly success: number
    readonly rate_limited: number
    readonly failed: number
    readonly auth: number
    readonly rejected: number
    readonly cancelled: number
    readonly total: number
  }
  /** 0 to 1, over the last 200 outcomes. */
  readonly errorRate: number
  readonly latencyMs: { readonly p50: number | null; readonly p99: number | null }
  readonly lastError: { readonly at: string; readonly message: string } | null
}
export interface UpstreamStatus {
  readonly name: string
  readonly protocol: string
  readonly state: "enabled" | "disabled"
  readonly disabled: { readonly reason: "auth" | "operator"; readonly at: string; readonly message: string } | null
  readonly deployments: ReadonlyArray<DeploymentStatus>
}
export type AlertEventType =
  | "balance.low"
  | "key.spend_limit_reached"
  | "deployment.disabled"
  | "video.failed"
  | "batch.completed"
  | "batch.failed"
  | "batch.expired"
  | "batch.cancelled"
export type DeliveryStatus = "pending" | "delivered" | "failed"
/** An alert as its webhook receives it (the JSON body of each delivery). */
export interface AlertEvent {
  /** Stable: the same happening noticed twice has the same id (sent as `x-tollgate-event-id`). */
  readonly id: string
  readonly type: AlertEventType
  readonly accountId: string | null
  readonly createdAt: string
  readonly data: Readonly<Record<string, unknown>>
}
/** One event to one webhook, from the delivery outbox. */
export interface AlertDelivery {
  readonly id: string
  readonly eventId: string
  readonly type: AlertEventType
  /** `config:…` for the config file's webhooks, else the account endpoint's id. */
  readonly endpoint: string
  /** null for the operator's own events (a deployment disabled). */
  readonly accountId: string | null
  readonly url: string
  readonly status: DeliveryStatus
  readonly attempts: number
  /** When a pending delivery is tried next, else null. */
  readonly nextAttemptAt: string | null
  /** The last attempt's HTTP status, null when none answered. */
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly createdAt: string
  readonly deliveredAt: string | null
  readonly event: AlertEvent
}
export interface KeyBalance {
  readonly balance: string
  readonly held: string
  readonly available: string
  readonly key: {
    readonly id: string
    readonly spent: string
    readonly held: string
    readonly spendLimit: string | null
  }
}

/**
 * Exact difference of two decimal money strings ("0.052000"), computed on integer micro-dollars: the console never
 * does float arithmetic on money.
 */
export const subtractMoney = (a: string, b: string): string => {
  const micros = (s: string) => {
    const negative = s.startsWith("-")
    const [whole, fraction = ""] = s.replace(/^[-+]/, "").split(".")
    const value = BigInt(whole || "0") * 1_000_000n + BigInt((fraction + "000000").slice(0, 6))
    return negative ? -value : value
  }
  const diff = micros(a) - micros(b)
  const abs = diff < 0n ? -diff : diff
  const text = `${abs / 1_000_000n}.${(abs % 1_000_000n).toString().padStart(6, "0")}`
  return diff < 0n ? `-${text}` : text
}

export const shortDate = (iso: string | null) => (iso === null ? "—" : iso.replace("T", " ").slice(0, 19))

// ---- batches (docs/api/batches.md) ----

/** A cursor-paged list as `/v1/batches`, `/v1/messages/batches` and `/admin/batches` all answer. */
export interface ListPage<T> {
  readonly data: ReadonlyArray<T>
  readonly last_id: string | null
  readonly has_more: boolean
}

/** OpenAI's batch object, plus the gateway's `charge`. Times are Unix seconds. */
export interface OpenAiBatch {
  readonly id: string
  readonly endpoint: string
  readonly status:
    | "validating"
    | "in_progress"
    | "finalizing"
    | "completed"
    | "failed"
    | "expired"
    | "cancelling"
    | "cancelled"
  readonly input_file_id: string
  readonly output_file_id: string | null
  readonly error_file_id: string | null
  readonly errors: { readonly data: ReadonlyArray<{ readonly message: string }> } | null
  readonly created_at: number
  readonly completed_at: number | null
  readonly failed_at: number | null
  readonly expired_at: number | null
  readonly cancelled_at: number | null
  readonly request_counts: { readonly total: number; readonly completed: number; readonly failed: number }
  readonly metadata: Readonly<Record<string, string>> | null
  readonly charge: { readonly captured: string }
}

/** Anthropic's message batch object. Times are RFC 3339 strings. */
export interface MessageBatch {
  readonly id: string
  readonly processing_status: "in_progress" | "canceling" | "ended"
  readonly request_counts: {
    readonly processing: number
    readonly succeeded: number
    readonly errored: number
    readonly canceled: number
    readonly expired: number
  }
  readonly created_at: string
  readonly ended_at: string | null
}

/** A batch of either surface as `/admin/batches` shows it; `held` and `refunded` only in the single view. */
export interface AdminBatch {
  readonly id: string
  readonly accountId: string
  readonly keyId: string
  readonly surface: "openai" | "anthropic"
  readonly endpoint: string
  readonly status: OpenAiBatch["status"]
  readonly requestCounts: {
    readonly total: number
    readonly completed: number
    readonly failed: number
    readonly pending: number
  }
  readonly charged: string
  readonly held?: string
  readonly refunded?: string
  readonly createdAt: string
  readonly expiresAt: string | null
  readonly inProgressAt: string | null
  readonly cancellingAt: string | null
  readonly endedAt: string | null
  readonly outputFileId: string | null
  readonly errorFileId: string | null
  readonly error: string | null
  readonly metadata: Readonly<Record<string, string>> | null
}

/** Reads a list page, refusing an answer that is not one (so the page shows an error, not a blank table). */
export const loadPage = async <T extends { readonly id: string }>(api: Client, path: string): Promise<ListPage<T>> => {
  const body = await api.json<unknown>(path)
  const page = body as { data?: unknown; last_id?: unknown; has_more?: unknown }
  const rows = typeof body === "object" && body !== null && Array.isArray(page.data) ? page.data : undefined
  if (
    rows === undefined ||
    !rows.every((row) => typeof row === "object" && row !== null && typeof row.id === "string")
  ) {
    throw new ApiFailure(0, `unexpected answer from ${path.split("?")[0]}: not a list of batches`, "bad_response")
  }
  return {
    data: rows as ReadonlyArray<T>,
    last_id: typeof page.last_id === "string" ? page.last_id : null,
    has_more: page.has_more === true
  }
}

/** Unix seconds (OpenAI's times) as an ISO time, as the console's other times are. */
export const unixIso = (seconds: number | null) => (seconds === null ? null : new Date(seconds * 1000).toISOString())
