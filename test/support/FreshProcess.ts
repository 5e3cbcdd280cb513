/**
 * A check about what a process loads has to run in a process that has loaded nothing yet: the test runner's own
 * process has loaded everything already. `inFreshProcess` runs `script` (an ES module; TypeScript allowed) in a new
 * node process at the repository's root and returns the JSON its last line printed.
 */
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"

const root = resolve(import.meta.dirname, "../..")

export const inFreshProcess = <A = Record<string, unknown>>(script: string): A => {
  const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "" }
  })
  return JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as A
}
