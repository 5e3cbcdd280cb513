/**
 * A model sent to an endpoint that does not serve its kind, through the real gateway on the default catalog (which
 * has a model of every kind): every endpoint × kind pair is a 400 in the called protocol's envelope that names what
 * the model is and the endpoint that serves it, holding nothing. And a known path missing its `/v1` or `/v1beta`
 * prefix is a 404 that says which prefix to add.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { PNG } from "pngjs"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"
import { type Admin, closeAfterReplay, type Customer, makeAdmin } from "./chat/ChatHarness.ts"

let gateway: TestGateway
let admin: Admin
let customer: Customer
beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
  customer = await admin.customer()
}, 60_000)
afterAll(() => closeAfterReplay(gateway === undefined ? undefined : { admin, close: () => gateway.close() }))

type Kind = "text" | "chat-image" | "dedicated-image" | "video" | "embeddings" | "transcription" | "speech"

/** One model of each kind in the default catalog, what the error calls it, and the endpoint it names. */
const MODELS: Record<Kind, { readonly id: string; readonly called: string; readonly endpoint: string }> = {
  text: { id: "sim-openai", called: "text (chat) model", endpoint: "POST /v1/chat/completions" },
  "chat-image": {
    id: "imgchat-2.5-flash-image",
    called: "chat-style image model",
    endpoint: "POST /v1/chat/completions"
  },
  "dedicated-image": { id: "imggen-2", called: "dedicated image model", endpoint: "POST /v1/images/generations" },
  video: { id: "video-model-2.0-fast", called: "video model", endpoint: "POST /v1/videos" },
  embeddings: { id: "sim-embedding", called: "embeddings model", endpoint: "POST /v1/embeddings" },
  transcription: { id: "sim-transcribe", called: "transcription model", endpoint: "POST /v1/audio/transcriptions" },
  speech: { id: "sim-tts", called: "speech model", endpoint: "POST /v1/audio/speech" }
}

const png = (() => {
  const image = new PNG({ width: 8, height: 8 })
  image.data.fill(200)
  return `data:image/png;base64,${PNG.sync.write(image).toString("base64")}`
})()

/** A second of 8 kHz 16-bit mono silence. */
const wav = (() => {
  const samples = 8000
  const bytes = Buffer.alloc(44 + samples * 2)
  bytes.write("RIFF", 0)
  bytes.writeUInt32LE(36 + samples * 2, 4)
  bytes.write("WAVEfmt ", 8)
  bytes.writeUInt32LE(16, 16)
  bytes.writeUInt16LE(1, 20)
  bytes.writeUInt16LE(1, 22)
  bytes.writeUInt32LE(8000, 24)
  bytes.writeUInt32LE(16000, 28)
  bytes.writeUInt16LE(2, 32)
  bytes.writeUInt16LE(16, 34)
  bytes.write("data", 36)
  bytes.writeUInt32LE(samples * 2, 40)
  return bytes
})()

interface Endpoint {
  readonly name: string
  readonly serves: ReadonlyArray<Kind>
  readonly envelope: "openai" | "anthropic" | "google"
  readonly call: (model: string) => Promise<Response>
}

const headers = () => ({
  authorization: `Bearer ${customer.key}`,
  "anthropic-version": "2023-06-01",
  "content-type": "application/json"
})
const postJson = (path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, { method: "POST", headers: headers(), body: JSON.stringify(body) })

const hello = [{ role: "user", content: "Hello" }]

const ENDPOINTS: ReadonlyArray<Endpoint> = [
  {
    name: "/v1/chat/completions",
    serves: ["text", "chat-image"],
    envelope: "openai",
    call: (model) => postJson("/v1/chat/completions", { model, messages: hello })
  },
  {
    name: "/v1/messages",
    serves: ["text", "chat-image"],
    envelope: "anthropic",
    call: (model) => postJson("/v1/messages", { model, max_tokens: 16, messages: hello })
  },
  {
    name: ":generateContent",
    serves: ["text", "chat-image"],
    envelope: "google",
    call: (model) =>
      postJson(`/v1beta/models/${model}:generateContent`, { contents: [{ role: "user", parts: [{ text: "Hi" }] }] })
  },
  {
    name: "/v1/images/generations",
    serves: ["dedicated-image"],
    envelope: "openai",
    call: (model) => postJson("/v1/images/generations", { model, prompt: "a cat" })
  },
  {
    name: "/v1/images/edits",
    serves: ["dedicated-image"],
    envelope: "openai",
    call: (model) => postJson("/v1/images/edits", { model, prompt: "a cat", images: [{ image_url: png }] })
  },
  {
    name: "/v1/videos",
    serves: ["video"],
    envelope: "openai",
    call: (model) => postJson("/v1/videos", { model, prompt: "a fox" })
  },
  {
    name: "/v1/embeddings",
    serves: ["embeddings"],
    envelope: "openai",
    call: (model) => postJson("/v1/embeddings", { model, input: "x" })
  },
  {
    name: "/v1/audio/transcriptions",
    serves: ["transcription"],
    envelope: "openai",
    call: (model) => {
      const form = new FormData()
      form.set("model", model)
      form.set("file", new Blob([new Uint8Array(wav)], { type: "audio/wav" }), "a.wav")
      return fetch(`${gateway.url}/v1/audio/transcriptions`, {
        method: "POST",
        headers: { authorization: `Bearer ${customer.key}` },
        body: form
      })
    }
  },
  {
    name: "/v1/audio/speech",
    serves: ["speech"],
    envelope: "openai",
    call: (model) => postJson("/v1/audio/speech", { model, input: "Hi", voice: "alloy" })
  }
]

const messageOf = (envelope: Endpoint["envelope"], body: { error?: { message?: string }; type?: string }) => {
  if (envelope === "anthropic") assert.strictEqual(body.type, "error")
  if (envelope === "google") assert.strictEqual((body.error as { status?: string }).status, "INVALID_ARGUMENT")
  return String(body.error?.message)
}

describe("a model sent to an endpoint that does not serve its kind", () => {
  for (const endpoint of ENDPOINTS) {
    it(`${endpoint.name}: names each other kind and the endpoint that serves it`, async () => {
      for (const [kind, model] of Object.entries(MODELS) as Array<[Kind, (typeof MODELS)[Kind]]>) {
        if (endpoint.serves.includes(kind)) continue
        const response = await endpoint.call(model.id)
        const body = await response.json()
        const what = `${model.id} on ${endpoint.name}: ${JSON.stringify(body)}`
        assert.strictEqual(response.status, 400, what)
        const message = messageOf(endpoint.envelope, body)
        assert.include(message, `'${model.id}' is a`, what)
        assert.include(message, model.called, what)
        assert.include(message, model.endpoint, what)
        for (const other of Object.values(MODELS)) {
          if (other.called !== model.called) assert.notInclude(message, other.called, what)
        }
      }
      const types = (await admin.ledger(customer.accountId)).map((entry) => entry.type)
      assert.notInclude(types, "HoldPlaced", "nothing is held for a model on the wrong endpoint")
    })
  }
})

describe("a known path without its version prefix", () => {
  const call = (method: string, path: string) =>
    fetch(`${gateway.url}${path}`, {
      method,
      headers: headers(),
      ...(method === "GET" ? {} : { body: JSON.stringify({ model: "video-model-2.0-fast", prompt: "a fox" }) })
    })

  it("is a 404 that says to add /v1", async () => {
    for (const [method, path] of [
      ["POST", "/videos"],
      ["GET", "/videos/video_123"],
      ["GET", "/videos/video_123/content"],
      ["POST", "/chat/completions"],
      ["POST", "/images/generations"],
      ["POST", "/images/edits"],
      ["POST", "/embeddings"],
      ["POST", "/audio/speech"],
      ["POST", "/audio/transcriptions"],
      ["GET", "/models"]
    ] as const) {
      const response = await call(method, path)
      const body = await response.json()
      assert.strictEqual(response.status, 404, path)
      assert.strictEqual(body.error.code, "unknown_path", path)
      assert.include(body.error.message, `add /v1`, path)
      assert.include(body.error.message, `/v1${path}`, path)
    }
  })

  it("answers /messages in Anthropic's envelope, saying to add /v1", async () => {
    const response = await call("POST", "/messages")
    const body = await response.json()
    assert.strictEqual(response.status, 404)
    assert.strictEqual(body.type, "error")
    assert.strictEqual(body.error.type, "not_found_error")
    assert.include(body.error.message, "/v1/messages")
  })

  it("answers the native path without /v1beta (or with /v1 instead) in Google's envelope, saying to use /v1beta", async () => {
    for (const path of ["/models/sim-gemini:generateContent", "/v1/models/sim-gemini:streamGenerateContent"]) {
      const response = await call("POST", path)
      const body = await response.json()
      assert.strictEqual(response.status, 404, path)
      assert.strictEqual(body.error.status, "NOT_FOUND", path)
      assert.include(body.error.message, "/v1beta/models/sim-gemini:", path)
    }
  })

  it("still says to remove a doubled /v1, and gives no hint for a path nobody serves", async () => {
    const doubled = await (await call("POST", "/v1/v1/messages")).json()
    assert.include(doubled.error.message, "remove the extra /v1")
    const nonsense = await call("POST", "/nonsense")
    const body = await nonsense.json()
    assert.strictEqual(nonsense.status, 404)
    assert.notInclude(body.error.message, "add /v1")
  })
})
