/**
 * The one place a plugin's failure reason becomes an HTTP status: plugins say why they failed, in the plugin spec's
 * words. The edge answers a live call with it (http/ErrorRules.ts; the envelope comes from the dialect that was
 * called), and a batch writes it into the line's result (app/batch/LinePlans.ts), as the status the client would have
 * had calling the endpoint directly.
 */
import type { FailureReason } from "@tollgate/plugin-spec"

const STATUS: Readonly<Record<FailureReason, number>> = {
  invalid_request: 400,
  rate_limited: 429,
  overloaded: 503,
  unavailable: 502,
  timeout: 504,
  not_found: 404,
  // Only a client that has left gets this, and it reads nothing; a 400 keeps it out of the 5xx error rate.
  cancelled: 400,
  misconfigured: 500
}

export const statusOfFailure = (reason: FailureReason): number => STATUS[reason]
