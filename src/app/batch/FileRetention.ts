/**
 * How long batch files are kept (docs/api/batches.md#retention): `files.retentionDays` of the operator config
 * (OpenAI's 30 days by default), or the upload's own `expires_after`. Past its `expires_at` a file is gone for its
 * account at once; the worker's sweep reclaims it later, except while a running batch still reads it.
 */
import type { OperatorConfigData } from "../config/OperatorConfigData.ts"
import { OperatorConfigDefaults } from "../config/decodeOperatorConfig.ts"
import type { FileRow } from "../ports/BatchStore.ts"

const DAY_MS = 86_400_000

/** When a file written at `at` expires: `afterSeconds` after, or the operator's retention after. */
export const fileExpiryFor = (config: OperatorConfigData) => {
  const retentionMs = (config.files?.retentionDays ?? OperatorConfigDefaults.filesRetentionDays) * DAY_MS
  return (at: Date, afterSeconds?: number): Date =>
    new Date(at.getTime() + (afterSeconds === undefined ? retentionMs : afterSeconds * 1000))
}

export const isExpired = (file: FileRow, at: Date): boolean => file.expires_at !== null && file.expires_at <= at
