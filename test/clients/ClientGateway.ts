/**
 * One real gateway per client-suite file, on the built-in simulator catalog (no operator config), and the checks the
 * client suites share. Clients reach it only through `loopbackFetch`, which refuses any other origin: a client that
 * would fall back to its vendor's default address (or phone home) fails the test instead of reaching the internet.
 */
import { assert } from "@effect/vitest"
import { simulatorConfig } from "../../src/adapters/simulator/DefaultCatalog.ts"
import { assertBilled, type Expected, type Tokens } from "../http/chat/Billing.ts"
import { type Admin, type Customer, closeAfterReplay, makeAdmin } from "../http/chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

// LangChain reads these when a run starts: no LangSmith tracing, no background callbacks outliving a test.
process.env.LANGCHAIN_TRACING_V2 = "false"
process.env.LANGSMITH_TRACING = "false"
process.env.LANGCHAIN_CALLBACKS_BACKGROUND = "false"

/** The default catalog's text models, one per upstream protocol (OpenAI, Anthropic, Gemini). */
export const TEXT_MODELS: ReadonlyArray<string> = simulatorConfig("http://sim.invalid", "k")
  .models.filter((model) => model.plugin === "text")
  .map((model) => model.id)

export interface ClientGateway {
  readonly gateway: TestGateway
  readonly admin: Admin
  /** `fetch` limited to the gateway's origin. */
  readonly fetch: typeof globalThis.fetch
  close(): Promise<void>
}

export const startClientGateway = async (): Promise<ClientGateway> => {
  const gateway = await startTestGateway()
  const origin = new URL(gateway.url).origin
  const loopbackFetch: typeof globalThis.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    if (url.origin !== origin) return Promise.reject(new Error(`a client tried to reach ${url.origin}`))
    return globalThis.fetch(input, init)
  }
  return { gateway, admin: makeAdmin(gateway), fetch: loopbackFetch, close: () => gateway.close() }
}

/** Ends a file: every projection replays to what was served, and the gateway closes. */
export const closeClientGateway = (h: ClientGateway | undefined): Promise<void> =>
  closeAfterReplay(h === undefined ? undefined : { admin: h.admin, close: h.close })

/** What a client reported as a request's usage, as the ledger must have charged it. */
export const billedFrom = (model: string, tokens: Tokens): Expected => {
  assert.isAbove(tokens.input, 0, `${model}: the client saw input tokens`)
  assert.isAbove(tokens.output, 0, `${model}: the client saw output tokens`)
  return { requestId: undefined, model, outcome: { _tag: "Usage", tokens } }
}

/**
 * Waits until every hold of the account is resolved (a stream settles just after its last byte), bounded only by the
 * test's timeout: the shared ledger helpers give up after a fixed number of polls, which a loaded machine can outlast.
 */
export const waitForSettlement = async (h: ClientGateway, accountId: string): Promise<void> => {
  for (;;) {
    const entries = await h.admin.ledger(accountId)
    const resolved = new Set(
      entries.filter((e) => e.type === "RefundIssued" || e.type === "UsageRecalculated").map((e) => e.holdId)
    )
    if (entries.every((e) => e.type !== "HoldPlaced" || resolved.has(e.holdId))) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Asserts the customer's holds are exactly `expected`, each charged the price of the usage its client saw. */
export const assertChargedAsSeen = async (h: ClientGateway, customer: Customer, expected: ReadonlyArray<Expected>) => {
  await waitForSettlement(h, customer.accountId)
  return assertBilled(h.admin, customer, expected)
}

export type { Customer }
