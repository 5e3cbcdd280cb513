/**
 * Claude Code (`@anthropic-ai/claude-code`, pinned) headless against the gateway, set up as its docs say for a
 * gateway: `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`, nothing else. On a model of each upstream protocol: a tool
 * loop answered as JSON (`--output-format json`), then the same conversation continued (`--continue`) as
 * `stream-json`; each call billed exactly once, as its answer said, nothing left held.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { writeFileSync } from "node:fs"
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

const claude = agentBinary("claude")

if ("skip" in claude) {
  console.warn(`[skipped] Claude Code: ${claude.skip}`)
  describe("Claude Code", () => it.skip(`skipped: ${claude.skip}`, () => {}))
} else {
  let h: AgentHarness
  beforeAll(async () => {
    h = await startAgentHarness()
  }, 300_000)
  afterAll(() => h?.close())

  /** The last JSON line a run printed with `--output-format json` or `stream-json`. */
  const resultOf = (stdout: string) =>
    JSON.parse(
      stdout
        .trim()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .at(-1) ?? "null"
    ) as {
      type?: string
      is_error?: boolean
      result?: string
    } | null

  describe.each(AGENT_MODELS)("Claude Code on %s", (model) => {
    it("runs a tool loop, continues the conversation, and every call is billed once", {
      timeout: 600_000
    }, async () => {
      const customer = await h.chat.admin.customer({ deposit: "20" })
      const home = scratch("claude-home")
      const work = scratch("claude-work")
      writeFileSync(join(work, "notes.txt"), "Tollgate notes\n")
      const env = { HOME: home, ANTHROPIC_BASE_URL: h.proxy.url, ANTHROPIC_API_KEY: customer.key }
      try {
        const loop = await runAgent(
          h,
          claude.bin,
          ["-p", "Hello! Please use the Read tool on notes.txt", "--model", model, "--output-format", "json"],
          { env, cwd: work }
        )
        assert.strictEqual(loop.code, 0, printed(loop))
        assert.deepInclude(resultOf(loop.stdout), { type: "result", is_error: false }, printed(loop))
        assert.isTrue(sentToolResult(loop), "the tool's result went back to the model")
        assert.isAtLeast(modelCalls(loop).length, 2)

        const continued = await runAgent(
          h,
          claude.bin,
          ["-p", "--continue", "Hello again", "--model", model, "--output-format", "stream-json", "--verbose"],
          { env, cwd: work }
        )
        assert.strictEqual(continued.code, 0, printed(continued))
        const result = resultOf(continued.stdout)
        assert.deepInclude(result, { type: "result", is_error: false }, printed(continued))
        assert.include(result?.result ?? "", "Hello again")
        // The continued call carries the first run's conversation, tool result included.
        assert.isTrue(sentToolResult({ ...continued, exchanges: modelCalls(continued).slice(-1) }))
        await assertBilledExactly(h, customer, [loop, continued])
      } finally {
        removeScratch(home, work)
      }
    })
  })
}
