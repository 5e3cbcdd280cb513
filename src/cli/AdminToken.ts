/**
 * Where the admin token comes from: `TOLLGATE_ADMIN_TOKEN`, else the file the server writes on first start,
 * `<data dir>/admin-token` (data dir = `TOLLGATE_DATA_DIR`, default `./data`). The token stays `Redacted` so it can
 * never end up in output or logs.
 */
import { Config, Effect, FileSystem, Option, Path, Redacted } from "effect"
import { AdminTokenMissing, AdminTokenUnreadable } from "./CliErrors.ts"

export interface AdminCredentials {
  readonly token: Redacted.Redacted<string>
  /** Named in error messages, so the user knows which file to check. */
  readonly tokenFile: string
}

const dataDir = Config.String("TOLLGATE_DATA_DIR").pipe(Config.withDefault("./data"))
const tokenFromEnv = Config.option(Config.Redacted("TOLLGATE_ADMIN_TOKEN"))

export const adminTokenFile: Effect.Effect<string, never, Path.Path> = Effect.gen(function* () {
  const path = yield* Path.Path
  return path.join(yield* Effect.orDie(dataDir), "admin-token")
})

export const loadAdminCredentials: Effect.Effect<
  AdminCredentials,
  AdminTokenMissing | AdminTokenUnreadable,
  FileSystem.FileSystem | Path.Path
> = Effect.gen(function* () {
  const tokenFile = yield* adminTokenFile
  const fromEnv = yield* Effect.orDie(tokenFromEnv)
  if (Option.isSome(fromEnv)) return { token: fromEnv.value, tokenFile }
  const fs = yield* FileSystem.FileSystem
  const contents = yield* fs
    .readFileString(tokenFile)
    .pipe(
      Effect.mapError((error): AdminTokenMissing | AdminTokenUnreadable =>
        error.reason._tag === "NotFound"
          ? new AdminTokenMissing({ tokenFile })
          : new AdminTokenUnreadable({ tokenFile, reason: error.reason.message })
      )
    )
  const token = contents.trim()
  if (token === "") return yield* new AdminTokenMissing({ tokenFile })
  return { token: Redacted.make(token), tokenFile }
})
