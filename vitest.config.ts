import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two files at a time: vitest's default on a 2-core machine is one (cores − 1), which left the second core to
    // Postgres alone and took CI to 20 minutes.
    maxWorkers: 2,
    // Every file: no API key or admin token in any log line or error response (test/support/SecretWatch.ts).
    setupFiles: ["test/support/SecretWatch.ts"],
    reporters: ["default"]
  }
})
