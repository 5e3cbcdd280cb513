/**
 * The coding agents as their users run them: the real CLIs (pinned in package.json, installed by `npm ci`), started
 * headless with a fresh home directory — their default configuration, only the gateway's address and a key set —
 * against a gateway this suite starts, through a logging proxy that keeps every exchange and what its answer said it
 * cost. A CLI whose native part did not install (or does not start here) skips, saying why.
 */
import { assert } from "@effect/vitest"
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { formatMicros, parseDecimal } from "../../src/domain/Money.ts"
import { settledLedger } from "../http/chat/Billing.ts"
import { type ChatHarness, closeAfterReplay, type Customer, startChatHarness } from "../http/chat/ChatHarness.ts"
import { type Exchange, type RecordingProxy, startRecordingProxy } from "../support/RecordingProxy.ts"

const ROOT = resolve(import.meta.dirname, "../..")

/** A model of each upstream protocol (OpenAI, Anthropic, Gemini), on simulators the suite watches. */
export const AGENT_MODELS = ["sim-openai", "sim-anthropic", "sim-gemini"] as const

export type Availability = { readonly bin: string } | { readonly skip: string }

/** The CLI's binary from node_modules/.bin, if it is there and answers `--version`. */
export const agentBinary = (name: "claude" | "codex" | "gemini"): Availability => {
  const bin = join(ROOT, "node_modules", ".bin", name)
  if (!existsSync(bin)) return { skip: `${name} is not installed (node_modules/.bin/${name} is missing)` }
  const probe = spawnSync(bin, ["--version"], {
    encoding: "utf8",
    timeout: 120_000,
    env: { PATH: process.env.PATH ?? "", HOME: tmpdir(), NODE_OPTIONS: "" }
  })
  if (probe.status !== 0) {
    const why = (probe.error?.message ?? `${probe.stderr}${probe.stdout}`).trim().split("\n")[0]
    return { skip: `${name} --version failed here (${why || `exit ${probe.status}`}): its native part did not install` }
  }
  return { bin }
}

export interface AgentHarness {
  readonly chat: ChatHarness
  readonly proxy: RecordingProxy
  close(): Promise<void>
}

export const startAgentHarness = async (): Promise<AgentHarness> => {
  const chat = await startChatHarness()
  const proxy = await startRecordingProxy(chat.gateway.url)
  return {
    chat,
    proxy,
    close: async () => {
      await proxy.close()
      await closeAfterReplay(chat)
    }
  }
}

export interface AgentRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  /** What went through the proxy during this run. */
  readonly exchanges: ReadonlyArray<Exchange>
}

/** A fresh directory for a CLI's home or its working directory, removed by the caller. */
export const scratch = (label: string): string => mkdtempSync(join(tmpdir(), `tollgate-agent-${label}-`))

export const removeScratch = (...dirs: ReadonlyArray<string>) => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
}

/**
 * Runs a CLI to its end with nothing on stdin. Its environment is only what a user would set: PATH, a fresh HOME,
 * and `env` (the base URL and key), never this process's (no test runner's NODE_OPTIONS, no real home).
 */
export const runAgent = (
  harness: AgentHarness,
  bin: string,
  args: ReadonlyArray<string>,
  options: { readonly env: Readonly<Record<string, string>>; readonly cwd: string; readonly timeoutMs?: number }
): Promise<AgentRun> =>
  new Promise((done, fail) => {
    const before = harness.proxy.exchanges().length
    const child = spawn(bin, args, {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? "", NODE_OPTIONS: "", TERM: "dumb", NO_COLOR: "1", ...options.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 240_000)
    child.on("error", (error) => {
      clearTimeout(timer)
      fail(error)
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      done({ code, stdout, stderr, exchanges: harness.proxy.exchanges().slice(before) })
    })
  })

/** The exchanges that called a model (the ones that can be billed): chat, messages, generateContent, responses. */
export const modelCalls = (run: AgentRun): ReadonlyArray<Exchange> =>
  run.exchanges.filter(
    (e) =>
      e.method === "POST" &&
      /^\/v1\/(chat\/completions|messages|responses)(\?|$)|:(stream)?[gG]enerateContent/.test(e.path)
  )

/** Whether a run's requests carried a tool's result back to the model: the loop went round. */
export const sentToolResult = (run: AgentRun): boolean =>
  modelCalls(run).some((e) => {
    const text = JSON.stringify(e.requestBody ?? null)
    return /"type":"tool_result"|"type":"function_call_output"|"type":"custom_tool_call_output"|"functionResponse"|"role":"tool"/.test(
      text
    )
  })

/**
 * Billed exactly once per call: every hold of the account is resolved; each model call answered 200 said a cost
 * (its header, or its trailer when streamed), and that is the ledger's one charge for its request id; no request
 * was charged that a client did not see answered; and the account's captured total is the sum of what was said.
 */
export const assertBilledExactly = async (
  harness: AgentHarness,
  customer: Customer,
  runs: ReadonlyArray<AgentRun>
): Promise<void> => {
  const entries = await settledLedger(harness.chat.admin, customer.accountId)
  const holds = entries.filter((e) => e.type === "HoldPlaced")
  for (const hold of holds) {
    assert.isTrue(
      entries.some((e) => e.holdId === hold.holdId && (e.type === "UsageRecalculated" || e.type === "RefundIssued")),
      `hold ${hold.holdId} (${hold.requestId}) is left held`
    )
  }
  const answered = runs.flatMap(modelCalls).filter((e) => e.status === 200)
  // A charge is the hold's capture plus any overage, under the request id its hold was placed for.
  const requestOf = new Map(holds.map((hold) => [hold.holdId, hold.requestId]))
  const charges = new Map<string, bigint>()
  for (const entry of entries) {
    const requestId = entry.holdId === null ? undefined : requestOf.get(entry.holdId)
    if ((entry.type === "UsageRecalculated" || entry.type === "OverageCharged") && typeof requestId === "string") {
      charges.set(requestId, (charges.get(requestId) ?? 0n) + (parseDecimal(entry.amount ?? "0") ?? 0n))
    }
  }
  let said = 0n
  for (const call of answered) {
    assert.isDefined(call.requestId, `${call.path}: every answer has an x-request-id`)
    assert.isDefined(call.cost, `${call.path} (${call.requestId}): the answer says what it cost`)
    const charged = charges.get(call.requestId ?? "")
    assert.strictEqual(
      charged === undefined ? undefined : formatMicros(charged),
      call.cost,
      `${call.requestId}: charged as said`
    )
    said += parseDecimal(call.cost ?? "0") ?? 0n
  }
  assert.strictEqual(charges.size, answered.length, "no request charged that was not answered to a client")
  const balance = await harness.chat.admin.balance(customer.accountId)
  assert.strictEqual(balance.captured, formatMicros(said), "captured is the sum of what the answers said")
  assert.strictEqual(balance.held, "0.000000", "nothing left held")
}

/** A line for the test's failure message: what the CLI printed, shortened. */
export const printed = (run: AgentRun): string =>
  `exit ${run.code}\nstdout: ${run.stdout.slice(-2_000)}\nstderr: ${run.stderr.slice(-2_000)}`
