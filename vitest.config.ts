import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Every file: no API key or admin token in any log line or error response (test/support/SecretWatch.ts).
    setupFiles: ["test/support/SecretWatch.ts"],
    reporters: ["default"]
  }
})
