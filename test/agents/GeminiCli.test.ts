/**
 * Gemini CLI (`@google/gemini-cli`, pinned; it bundles `@google/genai` 1.30, whose stream parser takes nothing but
 * `data:` lines) headless against the gateway: `GOOGLE_GEMINI_BASE_URL` and `GEMINI_API_KEY`, with the API-key sign-in
 * its first run asks for saved in its settings (`security.auth.selectedType`). On a model of each upstream protocol:
 * a tool loop, then the session resumed (`--resume latest`); every call answered once (no retry: a retry would be
 * billed again), billed as its answer said, nothing left held.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import {
  AGENT_MODELS,
  type AgentHarness,
  agentBinary,
  assertBilledExactly,
  modelCalls,
  printed,
  removeScratch,
  runAgent,
  scratch,
  sentToolResult,
  startAgentHarness
} from "./AgentHarness.ts"

const gemini = agentBinary("gemini")

if ("skip" in gemini) {
  console.warn(`[skipped] Gemini CLI: ${gemini.skip}`)
  describe("Gemini CLI", () => it.skip(`skipped: ${gemini.skip}`, () => {}))
} else {
  let h: AgentHarness
  beforeAll(async () => {
    h = await startAgentHarness()
  }, 300_000)
  afterAll(() => h?.close())

  const responseOf = (stdout: string) =>
    JSON.parse(stdout.slice(stdout.indexOf("{"))) as { response?: string; error?: unknown }

  describe.each(AGENT_MODELS)("Gemini CLI on %s", (model) => {
    it("runs a tool loop, resumes the session, and every call is billed once", { timeout: 600_000 }, async () => {
      const customer = await h.chat.admin.customer({ deposit: "20" })
      const home = scratch("gemini-home")
      const work = scratch("gemini-work")
      writeFileSync(join(work, "notes.txt"), "Tollgate notes\n")
      mkdirSync(join(home, ".gemini"))
      writeFileSync(
        join(home, ".gemini", "settings.json"),
        JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } })
      )
      const env = { HOME: home, GOOGLE_GEMINI_BASE_URL: h.proxy.url, GEMINI_API_KEY: customer.key }
      try {
        const loop = await runAgent(
          h,
          gemini.bin,
          ["--skip-trust", "-m", model, "-o", "json", "-p", "Hello! Please use the read_file tool to read notes.txt"],
          { env, cwd: work }
        )
        assert.strictEqual(loop.code, 0, printed(loop))
        assert.isUndefined(responseOf(loop.stdout).error, printed(loop))
        assert.isTrue(sentToolResult(loop), "the tool's result went back to the model")
        const resumed = await runAgent(
          h,
          gemini.bin,
          ["--skip-trust", "-m", model, "-o", "json", "--resume", "latest", "-p", "Hello again"],
          { env, cwd: work }
        )
        assert.strictEqual(resumed.code, 0, printed(resumed))
        assert.include(responseOf(resumed.stdout).response ?? "", "Hello again", printed(resumed))
        // One call per turn of the model: a tool loop is two, the resumed turn one. Any more would be a retry.
        assert.strictEqual(modelCalls(loop).length, 2, printed(loop))
        assert.strictEqual(modelCalls(resumed).length, 1, printed(resumed))
        for (const call of [...modelCalls(loop), ...modelCalls(resumed)]) assert.strictEqual(call.status, 200)
        await assertBilledExactly(h, customer, [loop, resumed])
      } finally {
        removeScratch(home, work)
      }
    })
  })
}
