import { defineConfig } from "vitest/config"

/**
 * Files whose checks are about time or the whole machine (a health answer within 100 ms beside a 30 MB prompt,
 * `kill -9` of a child gateway and its restart, a database restart, a drain within its grace, CPU per request, the
 * coding agents' CLIs): they run last, one at a time, with the machine to themselves. Everything else runs two files
 * at a time — on a 2-core machine vitest's default is one (cores − 1), which left the second core to Postgres alone
 * and CI at 26 minutes (22 with this split). With every in-memory PGlite started from one migrated template and the
 * child gateways on the compiled bundle (the two global setups below), `npm test` took 15.5 minutes on a 2-core
 * machine with nothing else running (2026-11-28, 1,852 tests).
 */
const alone = [
  "test/http/chat/LargePrompt.test.ts",
  "test/faults/ProcessKill.test.ts",
  "test/faults/ResponsesKill.test.ts",
  "test/faults/PostgresRestart.test.ts",
  "test/faults/StartStop.test.ts",
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
