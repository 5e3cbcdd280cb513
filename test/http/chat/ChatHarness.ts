/**
 * A gateway for the SDK matrix: the real server on PGlite, its text models pointed at simulators this test controls
 * (the gateway never forwards a client's `x-sim-fault` upstream, so faults are set on the simulator itself), plus
 * fallback models whose first upstream is a closed port or a simulator that always answers 500.
 */
import { freePort } from "../../support/Ports.ts"
import { assert } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import type { Wire } from "./Fixtures.ts"

export const SIM_MODELS = ["sim-openai", "sim-anthropic", "sim-gemini"] as const
export type SimModel = (typeof SIM_MODELS)[number]

export interface ChatHarness {
  readonly gateway: TestGateway
  /** Serves the three sim models. */
  readonly sim: RunningSimulator
  /** Always answers 500: the first upstream of `fallback-500`. */
  readonly broken: RunningSimulator
  /** An OpenAI-compatible vendor whose tool-call ids (`functions.get_weather:0`) break Anthropic's pattern. */
  readonly kimi: RunningSimulator
  readonly admin: Admin
  close(): Promise<void>
}

const configYaml = (sim: string, broken: string, kimi: string, deadPort: number): string => `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-anthropic: { protocol: anthropic, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-gemini: { protocol: gemini, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-responses: { protocol: openai-responses, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  dead: { protocol: openai, baseUrl: "http://127.0.0.1:${deadPort}/v1", apiKey: "sk-none", timeoutMs: 5000 }
  broken: { protocol: anthropic, baseUrl: "${broken}", apiKey: "sk-sim-test-key", timeoutMs: 5000 }
  kimi: { protocol: openai, baseUrl: "${kimi}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
${SIM_MODELS.map(
  (id) =>
    `  - { id: ${id}, plugin: text, upstreams: [${id}], upstreamModel: ${id}, pricing: { input: "0.15", output: "0.60", webSearch: "0.01" } }`
).join("\n")}
  - { id: fallback-closed, plugin: text, upstreams: [dead, sim-anthropic], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
  - { id: fallback-500, plugin: text, upstreams: [broken, sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-kimi, plugin: text, upstreams: [kimi], upstreamModel: kimi-k2, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-responses, plugin: text, upstreams: [sim-responses], upstreamModel: sim-responses, pricing: { input: "0.15", output: "0.60", webSearch: "0.01" } }
  - { id: hosted-refused, plugin: text, upstreams: [sim-gemini], upstreamModel: sim-gemini, pricing: { input: "0.15", output: "0.60" }, hostedTools: refuse }
  - { id: two-upstreams, plugin: text, upstreams: [sim-anthropic, sim-openai], upstreamModel: sim-x, pricing: { input: "0.15", output: "0.60" } }
`

export const startChatHarness = async (): Promise<ChatHarness> => {
  const sim = await startSimulator()
  const broken = await startSimulator({ faults: { status: 500 } })
  const kimi = await startSimulator({ toolCallIds: "kimi" })
  const dir = mkdtempSync(join(tmpdir(), "tollgate-chat-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, configYaml(sim.baseUrl, broken.baseUrl, kimi.baseUrl, await freePort()))
  const gateway = await startTestGateway({ configPath })
  return {
    gateway,
    sim,
    broken,
    kimi,
    admin: makeAdmin(gateway),
    close: async () => {
      await gateway.close()
      await sim.close()
      await broken.close()
      await kimi.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

export interface LedgerEntry {
  readonly position: number
  readonly type: string
  readonly amount: string | null
  readonly holdId: string | null
  readonly requestId: string | null
  readonly keyId: string | null
  readonly model: string | null
  readonly data: Record<string, unknown>
}

export interface Customer {
  readonly accountId: string
  readonly keyId: string
  readonly key: string
}

export interface Admin {
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Wire }>
  /** A fresh account holding `deposit` USD and one key (optionally limited to `models`). */
  customer(options?: { readonly deposit?: string; readonly models?: ReadonlyArray<string> }): Promise<Customer>
  ledger(accountId: string): Promise<ReadonlyArray<LedgerEntry>>
  /** The entries of the hold the request `requestId` placed (none when it placed none). */
  request(accountId: string, requestId: string | null | undefined): Promise<ReadonlyArray<LedgerEntry>>
  balance(accountId: string): Promise<{ deposited: string; captured: string; held: string; available: string }>
}

export const makeAdmin = (gateway: TestGateway): Admin => {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${gateway.adminToken}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, body: text.length > 0 ? JSON.parse(text) : null }
  }
  // Every entry, following `next` past the page limit.
  const ledger = async (accountId: string): Promise<ReadonlyArray<LedgerEntry>> => {
    const entries: Array<LedgerEntry> = []
    let after = 0
    for (;;) {
      const response = await call("GET", `/admin/accounts/${accountId}/ledger?after=${after}&limit=1000`)
      entries.push(...response.body.data)
      if (response.body.next === null || response.body.next === undefined) return entries
      after = response.body.next
    }
  }
  let counter = 0
  return {
    call,
    customer: async (options = {}) => {
      counter += 1
      const account = await call("POST", "/admin/accounts", { name: `chat-${counter}` })
      if (account.status !== 201) throw new Error(`account: ${JSON.stringify(account.body)}`)
      const deposit = options.deposit ?? "10"
      if (deposit !== "0") {
        await call("POST", `/admin/accounts/${account.body.id}/deposits`, {
          amount: deposit,
          reference: `d-${counter}`
        })
      }
      const key = await call("POST", `/admin/accounts/${account.body.id}/keys`, {
        name: `key-${counter}`,
        ...(options.models === undefined ? {} : { models: options.models })
      })
      if (key.status !== 201) throw new Error(`key: ${JSON.stringify(key.body)}`)
      return { accountId: account.body.id, keyId: key.body.id, key: key.body.key }
    },
    ledger,
    request: async (accountId, requestId) => {
      const entries = await ledger(accountId)
      const hold = entries.find((entry) => entry.type === "HoldPlaced" && entry.requestId === requestId)
      return hold === undefined ? [] : entries.filter((entry) => entry.holdId === hold.holdId)
    },
    balance: async (accountId) => (await call("GET", `/admin/accounts/${accountId}`)).body.balance
  }
}

/** Ends a suite: replays every projection, closes what it started, and fails if replay found any difference. */
export const closeAfterReplay = async (
  harness: { readonly admin: Admin; close(): Promise<void> } | undefined,
  ...others: ReadonlyArray<{ close(): Promise<void> } | undefined>
): Promise<void> => {
  const replay = await harness?.admin.call("POST", "/admin/replay")
  await Promise.all([harness?.close(), ...others.map((other) => other?.close())])
  assert.strictEqual(replay?.status, 200)
  assert.isTrue(replay?.body.ok, JSON.stringify(replay?.body))
}
