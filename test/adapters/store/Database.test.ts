import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../../../src/adapters/store/Database.ts"

const sharedBuffers = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ shared_buffers: string }>`SHOW shared_buffers`
  return row?.shared_buffers
})

describe("the embedded store", () => {
  it.effect(
    "runs PGlite with 32 MB of shared buffers",
    () =>
      Effect.gen(function* () {
        const dataDir = join(mkdtempSync(join(tmpdir(), "tollgate-database-")), "pglite")
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dataDir, { recursive: true, force: true })))
        const open = Effect.provide(sharedBuffers, Database.layer({ kind: "pglite", dataDir }))
        assert.strictEqual(yield* open, "32MB")
        assert.isTrue(existsSync(join(dataDir, "PG_VERSION")))
      }).pipe(Effect.scoped),
    { timeout: 120_000 }
  )
})
