import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { tmpdir } from "node:os"
import { fileURLToPath } from "node:url"
import { closedPort } from "./LocalServer.ts"

const bin = fileURLToPath(new URL("../../bin/tollgate.mjs", import.meta.url))

// The test runner's NODE_OPTIONS (a preload given by relative path) and any TOLLGATE_* of the shell stay out.
const baseEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name !== "NODE_OPTIONS" && !name.startsWith("TOLLGATE_"))
)

/** Runs the installed entry point as a user would, from a directory that is not the repository. */
const tollgate = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: tmpdir(), env: { ...baseEnv, NO_COLOR: "1", ...env } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : Number(error.code), stdout, stderr }))
    )
  })

describe("bin/tollgate.mjs", () => {
  it.live(
    "starts the TypeScript CLI from any directory, with help, usage errors and exit codes",
    () =>
      Effect.gen(function* () {
        const help = yield* tollgate(["--help"])
        assert.strictEqual(help.code, 0, help.stderr)
        assert.include(help.stdout, "tollgate <subcommand> [flags]")

        const badAmount = yield* tollgate(["deposit", "acc_1", "1.1234567"])
        assert.strictEqual(badAmount.code, 2)
        assert.include(badAmount.stderr, "at most 6 decimals")

        const port = yield* closedPort
        const down = yield* tollgate(["accounts", "list", "--url", `http://127.0.0.1:${port}`], {
          TOLLGATE_ADMIN_TOKEN: "t"
        })
        assert.strictEqual(down.code, 1)
        assert.include(down.stderr, "connection refused — is it running? (npm start)")
      }),
    { timeout: 60_000 }
  )
})
