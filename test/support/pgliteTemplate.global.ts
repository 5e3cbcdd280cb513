/** vitest globalSetup: the migrated PGlite template every in-memory test database starts from (PgliteTemplate.ts). */
import { Effect, Layer } from "effect"
import type { TestProject } from "vitest/node"
import { ensureTemplate } from "./PgliteTemplate.ts"

const migratedDump = async (): Promise<Blob> => {
  const { PGlite } = await import("@electric-sql/pglite")
  const db = await PGlite.create("memory://")
  try {
    const { PgClient } = await import("@effect/sql-pg")
    const { pgliteStream } = await import("../../src/adapters/store/PgliteDuplex.ts")
    const { migrate } = await import("../../src/adapters/store/Migrations.ts")
    const client = PgClient.layer({
      stream: pgliteStream(db),
      username: "postgres",
      database: "postgres",
      maxConnections: 1
    })
    await Effect.runPromise(Effect.scoped(Layer.build(Layer.effectDiscard(migrate()).pipe(Layer.provide(client)))))
    return await db.dumpDataDir("none")
  } finally {
    await db.close()
  }
}

export default async function setup(project: TestProject): Promise<void> {
  project.provide("pgliteTemplate", await ensureTemplate(migratedDump))
}
