import { afterAll, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import Anthropic from "@anthropic-ai/sdk"
import { type ChatHarness, startChatHarness } from "./ChatHarness.ts"

let h: ChatHarness
beforeAll(async () => {
  const t = Date.now()
  h = await startChatHarness()
  console.log("start ms", Date.now() - t)
}, 60_000)
afterAll(async () => {
  await h?.close()
})

describe("smoke", () => {
  it("works", async () => {
    const c = await h.admin.customer()
    const oa = new OpenAI({ apiKey: c.key, baseURL: `${h.gateway.url}/v1`, maxRetries: 0 })
    const an = new Anthropic({ apiKey: c.key, baseURL: h.gateway.url, maxRetries: 0 })
    for (const model of ["sim-openai", "sim-anthropic", "sim-gemini"]) {
      const r = await oa.chat.completions
        .create({ model, messages: [{ role: "user", content: "Hello there" }] })
        .withResponse()
      console.log(model, JSON.stringify(r.data), r.response.headers.get("x-request-id"))
      const m = await an.messages.create({
        model,
        max_tokens: 100,
        messages: [{ role: "user", content: "Hello there" }]
      })
      console.log(model, JSON.stringify(m))
    }
    console.log(JSON.stringify(await h.admin.ledger(c.accountId), null, 1).slice(0, 3000))
  })
})
