/**
 * `@google/genai` 1.30, the version Gemini CLI 0.61 bundles, whose stream reader takes nothing but `data:` lines: it
 * threw on the gateway's closing cost comments ("Incomplete JSON segment at the end") and the CLI retried, each try
 * billed. Streamed on a model of each upstream protocol, it reads every chunk, and each stream is billed once.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "google-genai-1.30"
import { assertBilled } from "../http/chat/Billing.ts"
import { type ClientGateway, closeClientGateway, startClientGateway, TEXT_MODELS } from "./ClientGateway.ts"

let h: ClientGateway
beforeAll(async () => {
  h = await startClientGateway()
}, 120_000)
afterAll(() => closeClientGateway(h))

describe.each(TEXT_MODELS)("@google/genai 1.30 → %s", (model) => {
  it("streams to the end without an error, billed once", async () => {
    const customer = await h.admin.customer()
    const ai = new GoogleGenAI({ apiKey: customer.key, httpOptions: { baseUrl: h.gateway.url } })
    let text = ""
    let finish: string | undefined
    for await (const chunk of await ai.models.generateContentStream({ model, contents: "Hello from an old SDK" })) {
      text += chunk.text ?? ""
      finish = chunk.candidates?.[0]?.finishReason ?? finish
    }
    assert.include(text, "Hello from an old SDK")
    assert.strictEqual(finish, "STOP")
    await assertBilled(h.admin, customer, [{ requestId: undefined, model, outcome: { _tag: "Settled" } }])
  })
})
