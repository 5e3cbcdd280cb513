import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  CREATE_FLAG,
  createInChild,
  type EntryCommand,
  folderToCreate
} from "../../../src/adapters/store/EmbeddedStoreCreation.ts"
import { isDatabase } from "../../../src/adapters/store/Database.ts"

/** A folder for one test, removed after it; the database goes in `<root>/pglite`. */
const scratch = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "tollgate-store-creation-"))),
  (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

/** A child that runs `code` with the folder it was asked to make as `folder`. */
const scriptEntry = (code: string): EntryCommand => ({
  executable: process.execPath,
  // `--`: what follows (the flag and the folder) are the script's arguments, not node's options.
  args: ["-e", `const folder = process.argv[process.argv.indexOf(${JSON.stringify(CREATE_FLAG)}) + 1]; ${code}`, "--"]
})

/** Postgres writes PG_VERSION first: the mark of a database for the store (Database.isDatabase). */
const markAsDatabase = (folder: string) => {
  mkdirSync(folder, { recursive: true })
  writeFileSync(join(folder, "PG_VERSION"), "17\n")
}

/** The child's source for `markAsDatabase` on each folder of `folders`, a JavaScript array expression. */
const markingAsDatabase = (folders: string) =>
  `for (const f of ${folders}) { require('node:fs').mkdirSync(f, { recursive: true }); ` +
  "require('node:fs').writeFileSync(f + '/PG_VERSION', '17\\n') }"

describe("the embedded store made in a child process", () => {
  it("reads the folder to make from the child's arguments", () => {
    assert.strictEqual(folderToCreate(["node", "main.js", CREATE_FLAG, "/data/pglite"]), "/data/pglite")
    assert.isUndefined(folderToCreate(["node", "main.js"]))
  })

  it.effect(
    "makes and migrates the database in the gateway's entry run as a child, then moves it into place whole",
    () =>
      Effect.gen(function* () {
        const root = yield* scratch
        const folder = join(root, "pglite")
        const entry = { executable: process.execPath, args: ["--import", "tsx", "src/main.ts"] }
        assert.strictEqual(yield* createInChild(folder, entry), "created")
        assert.deepStrictEqual(readdirSync(root), ["pglite"])
        // Opened here without the store layer (which would migrate): the child migrated it already.
        const { PGlite } = yield* Effect.promise(() => import("@electric-sql/pglite"))
        const db = yield* Effect.acquireRelease(
          Effect.promise(() => PGlite.create({ dataDir: folder })),
          (db) => Effect.promise(() => db.close())
        )
        const tables = yield* Effect.promise(() =>
          db.query<{ name: string }>(
            "SELECT table_name AS name FROM information_schema.tables WHERE table_name = 'events'"
          )
        )
        assert.deepStrictEqual(
          tables.rows.map((row) => row.name),
          ["events"]
        )
      }).pipe(Effect.scoped),
    { timeout: 180_000 }
  )

  it.effect("leaves a folder that is a database already as it is, without starting a child", () =>
    Effect.gen(function* () {
      const folder = join(yield* scratch, "pglite")
      markAsDatabase(folder)
      const never = { executable: "/nonexistent/tollgate-entry", args: [] }
      assert.strictEqual(yield* createInChild(folder, never), "existed")
    }).pipe(Effect.scoped)
  )

  it.effect("leaves the store to this process, and nothing behind, when the child fails or makes nothing", () =>
    Effect.gen(function* () {
      const root = yield* scratch
      const folder = join(root, "pglite")
      const entries: ReadonlyArray<EntryCommand> = [
        scriptEntry("require('node:fs').mkdirSync(folder, { recursive: true }); process.exit(3)"),
        scriptEntry(""),
        { executable: "/nonexistent/tollgate-entry", args: [] }
      ]
      for (const entry of entries) {
        assert.strictEqual(yield* createInChild(folder, entry), "left to this process")
        assert.deepStrictEqual(readdirSync(root), [])
      }
    }).pipe(Effect.scoped)
  )

  it.effect("keeps the database another process put in place meanwhile, and drops its own", () =>
    Effect.gen(function* () {
      const root = yield* scratch
      const folder = join(root, "pglite")
      const both = scriptEntry(markingAsDatabase(`[folder, ${JSON.stringify(folder)}]`))
      assert.strictEqual(yield* createInChild(folder, both), "existed")
      assert.deepStrictEqual(readdirSync(root), ["pglite"])
      assert.isTrue(isDatabase(folder))
    }).pipe(Effect.scoped)
  )

  it.effect("moves the database into a folder an earlier start left empty, and removes what it left half-made", () =>
    Effect.gen(function* () {
      const root = yield* scratch
      const folder = join(root, "pglite")
      mkdirSync(folder)
      mkdirSync(join(root, "pglite.new-999999"))
      writeFileSync(join(root, "pglite.new-999999", "base"), "half-made")
      assert.strictEqual(yield* createInChild(folder, scriptEntry(markingAsDatabase("[folder]"))), "created")
      assert.deepStrictEqual(readdirSync(root), ["pglite"])
      assert.isTrue(isDatabase(folder))
    }).pipe(Effect.scoped)
  )
})
