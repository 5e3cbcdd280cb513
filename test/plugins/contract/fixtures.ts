/** Client requests every chat plugin's contract run can use: one per client dialect, plus a tight output cap. */
import type { ContractRequest } from "./pluginContract.ts"

export const chatRequests: ReadonlyArray<ContractRequest> = [
  {
    name: "openai chat",
    dialect: "openai",
    body: {
      messages: [
        { role: "system", content: "You repeat things." },
        { role: "user", content: "Say something about the sea." },
        { role: "assistant", content: "The sea is wide." },
        { role: "user", content: "Tell me more about the deep blue sea please" }
      ]
    }
  },
  {
    name: "anthropic messages",
    dialect: "anthropic",
    body: {
      max_tokens: 256,
      system: "You repeat things.",
      messages: [{ role: "user", content: [{ type: "text", text: "Hello from the Anthropic side" }] }]
    }
  },
  {
    name: "gemini generateContent",
    dialect: "gemini",
    body: { contents: [{ role: "user", parts: [{ text: "Hello from the Gemini side of things" }] }] }
  },
  {
    name: "openai chat with max_tokens 5",
    dialect: "openai",
    body: {
      max_tokens: 5,
      messages: [{ role: "user", content: "one two three four five six seven eight nine ten eleven twelve" }]
    }
  }
]
