/**
 * One migrated PGlite data dir for the whole run: `initdb` and the migrations cost seconds of CPU per embedded
 * database, and the suite starts over a hundred of them. `pgliteTemplate.global.ts` makes the dump once (kept in the
 * system's temp folder, named by a digest of the migrations and PGlite's version, so a change to either makes a new
 * one); each in-memory database of a test starts from it (`Database.layer`'s `seed`), and still runs the migrations,
 * which find every file applied.
 */
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { inject } from "vitest"
import type { DatabaseOptions } from "../../src/adapters/store/Database.ts"
import { defaultMigrationsDir } from "../../src/adapters/store/Migrations.ts"

declare module "vitest" {
  export interface ProvidedContext {
    readonly pgliteTemplate: string | undefined
  }
}

/** Where the dump for the migrations as they are now lives (it may not exist yet). */
export const templatePath = (): string => {
  const digest = createHash("sha256")
  digest.update(readFileSync(new URL("../../node_modules/@electric-sql/pglite/package.json", import.meta.url)))
  for (const file of readdirSync(defaultMigrationsDir).sort()) {
    digest.update(file)
    digest.update(readFileSync(join(defaultMigrationsDir, file)))
  }
  return join(tmpdir(), `tollgate-pglite-${digest.digest("hex").slice(0, 16)}.tar`)
}

/** Writes the dump unless it is there; a temporary name and a rename keep a concurrent reader from a half file. */
export const ensureTemplate = async (make: () => Promise<Blob>): Promise<string> => {
  const path = templatePath()
  if (existsSync(path)) return path
  const dump = Buffer.from(await (await make()).arrayBuffer())
  const partial = `${path}.${process.pid}.partial`
  writeFileSync(partial, dump)
  renameSync(partial, path)
  return path
}

let seed: Blob | undefined
const templateSeed = (): Blob | undefined => {
  if (seed !== undefined) return seed
  let path: string | undefined
  try {
    path = inject("pgliteTemplate")
  } catch {
    // Outside a vitest worker (a script importing the test support): no template, a fresh initdb.
    return undefined
  }
  if (path === undefined || !existsSync(path)) return undefined
  seed = new Blob([readFileSync(path)])
  return seed
}

/** An in-memory embedded database, started from the run's migrated template when there is one. */
export const memoryPglite = (): DatabaseOptions => {
  const template = templateSeed()
  return template === undefined
    ? { kind: "pglite", dataDir: undefined }
    : { kind: "pglite", dataDir: undefined, seed: template }
}
