/**
 * Failures of the `tollgate` CLI that the user can act on. Each message says what went wrong and what to do next;
 * `runTollgate` prints it on stderr and exits with status 1.
 */
import { Schema } from "effect"

export class ServerUnreachable extends Schema.TaggedError<ServerUnreachable>()("ServerUnreachable", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot reach the Tollgate server at ${this.url}: ${this.reason} — is it running? (npm start)`
  }
}

export class AdminTokenMissing extends Schema.TaggedError<AdminTokenMissing>()("AdminTokenMissing", {
  tokenFile: Schema.String
}) {
  override get message() {
    return `no admin token found: set TOLLGATE_ADMIN_TOKEN or create ${this.tokenFile} (the server writes it on first start; TOLLGATE_DATA_DIR picks the data dir)`
  }
}

export class AdminTokenUnreadable extends Schema.TaggedError<AdminTokenUnreadable>()("AdminTokenUnreadable", {
  tokenFile: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot read the admin token from ${this.tokenFile}: ${this.reason}`
  }
}

export class AdminTokenRefused extends Schema.TaggedError<AdminTokenRefused>()("AdminTokenRefused", {
  tokenFile: Schema.String
}) {
  override get message() {
    return `the admin token was refused: set TOLLGATE_ADMIN_TOKEN or check ${this.tokenFile}`
  }
}

/** The server understood the request and said no (400, 404, 409, 5xx…), with the message of its error envelope. */
export class AdminRequestRejected extends Schema.TaggedError<AdminRequestRejected>()("AdminRequestRejected", {
  status: Schema.Number,
  serverMessage: Schema.String,
  code: Schema.NullOr(Schema.String)
}) {
  override get message() {
    const code = this.code === null ? "" : `, ${this.code}`
    return `the server refused the request: ${this.serverMessage} (HTTP ${this.status}${code})`
  }
}

/** The answer is not what the admin API contract promises: another service on that port, or a version skew. */
export class UnexpectedResponse extends Schema.TaggedError<UnexpectedResponse>()("UnexpectedResponse", {
  url: Schema.String,
  status: Schema.Number,
  detail: Schema.String
}) {
  override get message() {
    return `unexpected answer from ${this.url} (HTTP ${this.status}): ${this.detail} — is this a Tollgate server?`
  }
}

export class ReplayMismatch extends Schema.TaggedError<ReplayMismatch>()("ReplayMismatch", {
  mismatches: Schema.Number
}) {
  override get message() {
    return `replay verification failed: ${this.mismatches} mismatch${this.mismatches === 1 ? "" : "es"} between the events and the projections`
  }
}

export class AuditBroken extends Schema.TaggedError<AuditBroken>()("AuditBroken", {
  summary: Schema.String
}) {
  override get message() {
    return `audit verification failed: ${this.summary}`
  }
}

/** `tollgate batches tail` saw the batch end without doing its work (failed or expired). */
export class BatchEndedUnfinished extends Schema.TaggedError<BatchEndedUnfinished>()("BatchEndedUnfinished", {
  id: Schema.String,
  status: Schema.String,
  reason: Schema.NullOr(Schema.String)
}) {
  override get message() {
    return `batch ${this.id} ${this.status}${this.reason === null ? "" : `: ${this.reason}`}`
  }
}

export type CliFailure =
  | ServerUnreachable
  | AdminTokenMissing
  | AdminTokenUnreadable
  | AdminTokenRefused
  | AdminRequestRejected
  | UnexpectedResponse
  | ReplayMismatch
  | AuditBroken
  | BatchEndedUnfinished
