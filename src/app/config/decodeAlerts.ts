/**
 * The operator config's `alerts:` list: webhooks for every account (balance, key limits, video failures, batch
 * ends) and for the operator's own events (a deployment disabled). Each names its URL, the events it wants and the secret that
 * signs its deliveries; `balance.low` also needs the threshold, `balanceBelow`.
 */
import { Redacted } from "effect"
import { type Micros, parseDecimal } from "../../domain/Money.ts"
import type { Input } from "./ConfigInput.ts"
import { Unresolved } from "./expandEnv.ts"

/** What can be alerted on; `*` subscribes to all of them. */
export const ALERT_EVENTS = [
  "balance.low",
  "key.spend_limit_reached",
  "deployment.disabled",
  "video.failed",
  "batch.completed",
  "batch.failed",
  "batch.expired",
  "batch.cancelled"
] as const

export type AlertEventType = (typeof ALERT_EVENTS)[number]

export interface AlertWebhookConfig {
  readonly url: string
  readonly events: ReadonlyArray<string>
  /** Signs every delivery (HMAC-SHA256); never logged. */
  readonly secret: Redacted.Redacted<string>
  readonly balanceBelow: Micros | null
}

/** The problem with a webhook URL, or undefined: absolute http(s), no credentials in it. */
export const webhookUrlProblem = (url: string): string | undefined => {
  if (!URL.canParse(url)) return "expected an absolute http(s) URL"
  const parsed = new URL(url)
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return "expected an absolute http(s) URL"
  if (parsed.username !== "" || parsed.password !== "") return "must not carry a user name or password"
  return undefined
}

/** The problem with an event list, or undefined: a non-empty list of known event types (or `*`). */
export const eventsProblem = (events: unknown): string | undefined => {
  if (!Array.isArray(events) || events.length === 0)
    return `expected a non-empty list of ${ALERT_EVENTS.join(", ")} or *`
  for (const event of events) {
    if (event !== "*" && !(ALERT_EVENTS as ReadonlyArray<unknown>).includes(event)) {
      return `expected each of ${ALERT_EVENTS.join(", ")} or *`
    }
  }
  return undefined
}

/** Whether `events` includes `type` (or everything). */
export const subscribes = (events: ReadonlyArray<string>, type: string): boolean =>
  events.includes("*") || events.includes(type)

export const decodeAlerts = (input: Input, raw: unknown): ReadonlyArray<AlertWebhookConfig> => {
  const items = input.list(raw, "alerts", false)
  if (items === undefined) return []
  return items.flatMap((item, index) => {
    const path = `alerts[${index}]`
    const fields = input.object(item, path, ["url", "events", "secret", "balanceBelow"])
    if (fields === undefined) return []
    const url = input.string(fields.url, `${path}.url`)
    const urlProblem = url === undefined ? undefined : webhookUrlProblem(url)
    if (urlProblem !== undefined) input.issue(`${path}.url`, urlProblem)
    const problem = fields.events === Unresolved ? undefined : eventsProblem(fields.events)
    if (problem !== undefined) input.issue(`${path}.events`, problem)
    const secret = input.string(fields.secret, `${path}.secret`)
    const events = Array.isArray(fields.events) ? (fields.events as ReadonlyArray<string>) : []
    let balanceBelow: Micros | null = null
    if (fields.balanceBelow !== undefined && fields.balanceBelow !== null && fields.balanceBelow !== Unresolved) {
      const parsed = typeof fields.balanceBelow === "string" ? parseDecimal(fields.balanceBelow) : undefined
      if (parsed === undefined || parsed <= 0n) {
        input.issue(`${path}.balanceBelow`, 'expected a positive decimal string of USD, such as "5.00"')
      } else balanceBelow = parsed
    } else if (subscribes(events, "balance.low") && fields.balanceBelow !== Unresolved) {
      input.issue(`${path}.balanceBelow`, 'required for balance.low: the balance to alert below, such as "5.00"')
    }
    if (url === undefined || urlProblem !== undefined || problem !== undefined || secret === undefined) return []
    return [{ url, events, secret: Redacted.make(secret, { label: `${path}.secret` }), balanceBelow }]
  })
}
