import { defineConfig } from "vitest/config"

/**
 * Files whose checks are about time or the whole machine (a health answer within 100 ms beside a 30 MB prompt,
 * `kill -9` of a child gateway and its restart, a database restart, a drain within its grace, CPU per request, the
 * coding agents' CLIs, `npm start` itself, which builds the console into dist/ when it is missing and must not race
 * the console's own test doing the same): they run last, one at a time, with the machine to themselves, each file in
 * a fresh process.
 * Everything else runs two files at a time — on a 2-core machine vitest's default is one (cores − 1), which left the
 * second core to Postgres alone and CI at 26 minutes (22 with this split) — in two long-lived worker processes that
 * load each module once (`isolate: false`): a fresh process per file spent more CPU importing effect, the SDKs and
 * src/ again than most files spend testing (66 files of test/domain, test/plugins and test/http/chat: 108 s of CPU
 * isolated, 41 s shared). Files therefore keep nothing in module or global state that another file could see
 * (test/support/SecretWatch.ts installs its watchers once per process for that reason); a run with the files in a
 * shuffled order (`--sequence.shuffle.files`) passes. `npm test` took 6.5 minutes on a 2-core machine with nothing
 * else running (2026-11-28, 1,876 tests; 16 minutes before the shared workers).
 */
const alone = [
  "test/http/chat/LargePrompt.test.ts",
  "test/faults/ProcessKill.test.ts",
  "test/faults/ResponsesKill.test.ts",
  "test/faults/PostgresRestart.test.ts",
  "test/faults/StartStop.test.ts",
  "test/smoke/NpmStart.test.ts",
  "test/bench/**/*.test.ts",
  "test/agents/**/*.test.ts"
]
const everything = ["test/**/*.test.ts", "examples/**/*.test.ts"]

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Every file: no API key or admin token in any log line or error response (test/support/SecretWatch.ts).
    setupFiles: ["test/support/SecretWatch.ts"],
    // One migrated PGlite data dir that every in-memory test database starts from (test/support/PgliteTemplate.ts).
    // And the bundle `npm start` runs, for the gateways started as child processes (test/support/ChildGateway.ts).
    globalSetup: ["test/support/pgliteTemplate.global.ts", "test/support/childGateway.global.ts"],
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "together",
          include: everything,
          exclude: [...alone, "**/node_modules/**"],
          maxWorkers: 2,
          isolate: false,
          sequence: { groupOrder: 0 }
        }
      },
      {
        extends: true,
        test: {
          name: "alone",
          include: alone,
          exclude: ["**/node_modules/**"],
          maxWorkers: 1,
          sequence: { groupOrder: 1 }
        }
      }
    ]
  }
})
