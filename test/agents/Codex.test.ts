/**
 * Codex (`@openai/codex`, pinned) headless against the gateway with its default configuration: only a custom provider
 * in a fresh CODEX_HOME's config.toml — the gateway's base URL, `wire_api = "responses"` and the key's environment
 * variable — so it sends what it always sends (function tools, a `namespace` of sub-agent tools, a `web_search` hosted
 * tool). On a model of each upstream protocol: a hello, a tool loop (a shell command), then the session resumed
 * (`codex exec resume --last`); every call answered once, billed as its answer said, nothing left held.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import {
  AGENT_MODELS,
  type AgentHarness,
  type AgentRun,
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

const codex = agentBinary("codex")

/** Codex speaks the Responses API, so an `openai-responses` upstream is one of its protocols too. */
const CODEX_MODELS = [...AGENT_MODELS, "sim-responses"] as const

const configToml = (baseUrl: string) => `model_provider = "tollgate"

[model_providers.tollgate]
name = "Tollgate"
base_url = "${baseUrl}/v1"
env_key = "TOLLGATE_API_KEY"
wire_api = "responses"
`

/** The final agent message of a `--json` run. */
const answerOf = (run: AgentRun): string =>
  run.stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { type?: string; item?: { type?: string; text?: string } })
    .filter((event) => event.type === "item.completed" && event.item?.type === "agent_message")
    .map((event) => event.item?.text ?? "")
    .join("\n")

if ("skip" in codex) {
  console.warn(`[skipped] Codex: ${codex.skip}`)
  describe("Codex", () => it.skip(`skipped: ${codex.skip}`, () => {}))
} else {
  let h: AgentHarness
  beforeAll(async () => {
    h = await startAgentHarness()
  }, 300_000)
  afterAll(() => h?.close())

  describe.each(CODEX_MODELS)("Codex on %s", (model) => {
    it("says hello, runs a tool loop, resumes the session, and every call is billed once", {
      timeout: 600_000
    }, async () => {
      const customer = await h.chat.admin.customer({ deposit: "20" })
      const home = scratch("codex-home")
      const work = scratch("codex-work")
      writeFileSync(join(home, "config.toml"), configToml(h.proxy.url))
      writeFileSync(join(work, "notes.txt"), "Tollgate notes\n")
      const env = { HOME: home, CODEX_HOME: home, TOLLGATE_API_KEY: customer.key }
      const exec = (...args: ReadonlyArray<string>) =>
        runAgent(h, codex.bin, ["exec", "--skip-git-repo-check", "--json", "-m", model, ...args], { env, cwd: work })
      try {
        const hello = await exec("Hello there")
        assert.strictEqual(hello.code, 0, printed(hello))
        // The simulator echoes the start of the last user turn (Codex's environment context, then the prompt).
        assert.match(answerOf(hello), /^Echo: /, printed(hello))
        assert.include(JSON.stringify(modelCalls(hello)[0]?.requestBody), "Hello there")

        const loop = await exec("Please use the exec_command tool to list the files here")
        assert.strictEqual(loop.code, 0, printed(loop))
        assert.isTrue(sentToolResult(loop), `the tool's result went back to the model\n${printed(loop)}`)
        assert.include(answerOf(loop), "The tool returned", printed(loop))

        const resumed = await runAgent(
          h,
          codex.bin,
          ["exec", "--skip-git-repo-check", "--json", "-m", model, "resume", "--last", "Hello again"],
          { env, cwd: work }
        )
        assert.strictEqual(resumed.code, 0, printed(resumed))
        assert.match(answerOf(resumed), /^Echo: /, printed(resumed))
        assert.include(JSON.stringify(modelCalls(resumed)[0]?.requestBody), "Hello again")
        // The resumed turn carries the earlier conversation: its tool call and its output.
        assert.isTrue(sentToolResult(resumed), "the resumed session sent its history")

        // One call per turn of the model: a hello one, a tool loop two, the resumed turn one. More would be retries.
        assert.strictEqual(modelCalls(hello).length, 1, printed(hello))
        assert.strictEqual(modelCalls(loop).length, 2, printed(loop))
        assert.strictEqual(modelCalls(resumed).length, 1, printed(resumed))
        for (const call of [...modelCalls(hello), ...modelCalls(loop), ...modelCalls(resumed)]) {
          assert.strictEqual(call.status, 200, `${call.path}: ${call.responseText.slice(0, 500)}`)
        }
        await assertBilledExactly(h, customer, [hello, loop, resumed])
      } finally {
        removeScratch(home, work)
      }
    })
  })
}
