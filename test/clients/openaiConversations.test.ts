/**
 * The official `openai` SDK's Conversations API and background responses against the real gateway, on a model of each
 * upstream vendor (OpenAI, Anthropic, Gemini): `conversations.*` and `conversations.items.*` (paged), responses that
 * read and extend a conversation, `background` with `stream`, and `responses.retrieve(id, { stream: true })` resuming
 * from a sequence number; each conversation only its account's, and no charge beyond the responses themselves.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import type { Expected } from "../http/chat/Billing.ts"
import {
  assertChargedAsSeen,
  billedFrom,
  type ClientGateway,
  closeClientGateway,
  startClientGateway
} from "./ClientGateway.ts"

const VENDOR_MODELS = ["sim-openai", "sim-anthropic", "sim-gemini"] as const

let h: ClientGateway
beforeAll(async () => {
  h = await startClientGateway()
}, 60_000)
afterAll(() => closeClientGateway(h))

const client = (key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, fetch: h.fetch, maxRetries: 0 })

const billed = (model: string, usage: OpenAI.Responses.ResponseUsage | undefined | null): Expected =>
  billedFrom(model, { input: usage?.input_tokens ?? -1, output: usage?.output_tokens ?? -1 })

const textOf = (item: OpenAI.Conversations.ConversationItem): string =>
  item.type === "message"
    ? item.content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("")
    : ""

describe.each(VENDOR_MODELS)("openai SDK conversations → %s", (model) => {
  it("conversations and their items: create, retrieve, update, page, add, delete; responses continue one", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const conversation = await openai.conversations.create({
      metadata: { topic: "greetings" },
      items: [{ type: "message", role: "user", content: "My name is Ada." }]
    })
    assert.match(conversation.id, /^conv_/)
    assert.deepStrictEqual(conversation.metadata, { topic: "greetings" })
    assert.strictEqual((await openai.conversations.retrieve(conversation.id)).id, conversation.id)
    const updated = await openai.conversations.update(conversation.id, { metadata: { topic: "names" } })
    assert.deepStrictEqual(updated.metadata, { topic: "names" })

    const first = await openai.responses.create({ model, conversation: conversation.id, input: "What is my name?" })
    assert.strictEqual(first.status, "completed")
    assert.match(first.output_text, /Ada/, "the conversation's items reached the model")
    const second = await openai.responses.create({ model, conversation: { id: conversation.id }, input: "Thanks" })
    // The whole conversation went to the model: more input than the first turn's answer alone.
    assert.isAbove(
      second.usage?.input_tokens ?? 0,
      (first.usage?.input_tokens ?? 0) + (first.usage?.output_tokens ?? 0)
    )

    // Items: the first one, then each turn's input and output, in order; paged with `after`.
    const all: Array<OpenAI.Conversations.ConversationItem> = []
    for await (const item of openai.conversations.items.list(conversation.id, { limit: 2, order: "asc" }))
      all.push(item)
    assert.deepStrictEqual(
      all.map((item) => item.type),
      ["message", "message", "message", "message", "message"]
    )
    assert.strictEqual(textOf(all[0]), "My name is Ada.")
    assert.strictEqual(textOf(all[1]), "What is my name?")
    assert.strictEqual(textOf(all[2]), first.output_text)
    const newest = await openai.conversations.items.list(conversation.id, { limit: 1 })
    assert.strictEqual(newest.data[0]?.id, all[4]?.id, "newest first by default")

    const added = await openai.conversations.items.create(conversation.id, {
      items: [{ type: "message", role: "user", content: "One more thing." }]
    })
    const addedId = added.data[0]?.id as string
    assert.strictEqual(
      textOf(await openai.conversations.items.retrieve(addedId, { conversation_id: conversation.id })),
      "One more thing."
    )
    await openai.conversations.items.delete(addedId, { conversation_id: conversation.id })
    const gone = await openai.conversations.items.retrieve(addedId, { conversation_id: conversation.id }).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.instanceOf(gone, OpenAI.NotFoundError)

    // Another account sees none of it.
    const stranger = client((await h.admin.customer()).key)
    const hidden = await stranger.conversations.retrieve(conversation.id).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.instanceOf(hidden, OpenAI.NotFoundError)
    const borrowed = await stranger.responses.create({ model, conversation: conversation.id, input: "Who am I?" }).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.instanceOf(borrowed, OpenAI.BadRequestError)

    const deleted = await openai.conversations.delete(conversation.id)
    assert.isTrue(deleted.deleted)
    // Only the two responses were billed: the conversation itself costs nothing.
    await assertChargedAsSeen(h, customer, [billed(model, first.usage), billed(model, second.usage)])
  })

  it("background + stream, then retrieve(id, { stream: true, starting_after }) replays the same events", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const stream = await openai.responses.create({
      model,
      input: "Stream in the background",
      background: true,
      stream: true
    })
    const live: Array<OpenAI.Responses.ResponseStreamEvent> = []
    for await (const event of stream) live.push(event)
    assert.strictEqual(live[0]?.type, "response.queued")
    const last = live.at(-1)
    assert.strictEqual(last?.type, "response.completed")
    assert.deepStrictEqual(
      live.map((event) => event.sequence_number),
      live.map((_, index) => index),
      "numbered from 0 without gaps"
    )
    const id = last?.type === "response.completed" ? last.response.id : ""
    const retrieved = await openai.responses.retrieve(id)
    assert.strictEqual(retrieved.status, "completed")
    assert.isTrue(retrieved.background)

    const resumed: Array<OpenAI.Responses.ResponseStreamEvent> = []
    for await (const event of await openai.responses.retrieve(id, { stream: true, starting_after: 2 }))
      resumed.push(event)
    assert.deepStrictEqual(resumed, live.slice(3), "the replay agrees with the live stream")
    await assertChargedAsSeen(h, customer, [billed(model, retrieved.usage)])
  })
})
