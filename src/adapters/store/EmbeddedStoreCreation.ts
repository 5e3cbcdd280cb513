/**
 * A new embedded database is made in a child process, then opened here as an existing one.
 *
 * Making it (PGlite's initdb, then every migration on an empty database) touches memory that the running database never
 * needs again, and the process keeps it: PGlite's WebAssembly memory never shrinks, and the C allocator keeps what the
 * compilations freed. A gateway that made its database kept ~75 MB more at rest than the same gateway started again on
 * that folder (bench/README.md, "The embedded store made in a child process"). The child exits with that memory.
 *
 * The child makes the database in a sibling folder, which is renamed into place once whole: a first start killed
 * midway leaves no half-made database behind. Wherever the child cannot run (no entry script, Deno) or fails, nothing
 * is lost: the store is then made in this process, as before, and its failure, if any, is reported there.
 */
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import * as Database from "./Database.ts"

/** The argument that starts the gateway's entry script as the child, followed by the folder to make. */
export const CREATE_FLAG = "--create-embedded-store"

/** The folder this process was started to make (`<entry> --create-embedded-store <folder>`), if it was. */
export const folderToCreate = (argv: ReadonlyArray<string>): string | undefined => {
  const at = argv.indexOf(CREATE_FLAG)
  return at === -1 ? undefined : argv[at + 1]
}

/** What the child runs: the embedded store made in `folder` (initdb, migrations), then closed. */
export const createHere = (folder: string): Effect.Effect<void, unknown> =>
  Effect.scoped(Layer.build(Database.layer({ kind: "pglite", dataDir: folder })))

/** How to start this process's entry script again: the same runtime, flags and script. */
export interface EntryCommand {
  readonly executable: string
  readonly args: ReadonlyArray<string>
}

/**
 * This process's own entry, or undefined where it cannot be run again as a child: no script (an eval, a REPL) or a
 * runtime other than Node (Deno's `execPath` is `deno`, which takes its own flags). Debugger flags are left out, so that
 * the child does not claim the parent's inspector port.
 */
export const ownEntry = (): EntryCommand | undefined => {
  const script = process.argv[1]
  if (script === undefined || process.versions.deno !== undefined) return undefined
  const flags = process.execArgv.filter((flag) => !flag.startsWith("--inspect") && !flag.startsWith("--debug"))
  return { executable: process.execPath, args: [...flags, script] }
}

export type Creation = "existed" | "created" | "left to this process"

/** Runs `entry` to make the store in `folder`; whether it exited cleanly. Its output goes to this process's. */
const runChild = (entry: EntryCommand, folder: string): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    const child = spawn(entry.executable, [...entry.args, CREATE_FLAG, folder], {
      stdio: ["ignore", "inherit", "inherit"]
    })
    child.once("error", () => resume(Effect.succeed(false)))
    child.once("exit", (code) => resume(Effect.succeed(code === 0)))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** A database being made for `<folder>` is in `<folder>.new-<pid>` until it is whole. */
const MADE_SUFFIX = ".new-"

/**
 * Removes what earlier first starts left half-made beside `folder` (a start killed while its child ran), and makes the
 * parent folder. One process at a time uses an embedded data dir, so none of them is still being made.
 */
const clearLeftovers = (folder: string) => {
  const parent = dirname(folder)
  mkdirSync(parent, { recursive: true })
  const prefix = basename(folder) + MADE_SUFFIX
  for (const name of readdirSync(parent)) {
    if (name.startsWith(prefix)) rmSync(join(parent, name), { recursive: true, force: true })
  }
}

/** Moves a database made in `made` to `folder`, unless another process put one there first. */
const moveIntoPlace = (made: string, folder: string): Creation => {
  if (!Database.isDatabase(made)) return "left to this process"
  if (Database.isDatabase(folder)) return "existed"
  try {
    // rename(2) replaces an empty folder: `folder` may have been created empty by an earlier start.
    renameSync(made, folder)
    return "created"
  } catch {
    return Database.isDatabase(folder) ? "existed" : "left to this process"
  }
}

/**
 * Makes `folder` an embedded database, in a child process started from `entry`, unless it is one already. "left to
 * this process" when the child could not run or did not finish: the store layer then makes it here.
 */
export const createInChild = (
  folder: string,
  entry: EntryCommand | undefined = ownEntry()
): Effect.Effect<Creation> => {
  if (Database.isDatabase(folder)) return Effect.succeed("existed")
  if (entry === undefined) return Effect.succeed("left to this process")
  const made = `${folder}${MADE_SUFFIX}${process.pid}`
  const clear = Effect.sync(() => rmSync(made, { recursive: true, force: true }))
  return Effect.gen(function* () {
    yield* Effect.sync(() => clearLeftovers(folder))
    yield* Effect.logInfo(`making the embedded database in a child process: ${folder}`)
    const finished = yield* runChild(entry, made)
    return finished ? moveIntoPlace(made, folder) : "left to this process"
  }).pipe(Effect.ensuring(clear))
}
