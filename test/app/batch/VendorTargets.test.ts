/**
 * Which batch lines go to a vendor's batch API (src/app/batch/VendorTargets.ts): chat lines of a text model on any
 * batch-capable upstream, embeddings lines of an embeddings model only on a batch-capable OpenAI upstream, in the
 * routing's order of preference; everything else stays gateway-run.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ModelConfig, UpstreamConfig } from "../../../src/app/OperatorConfig.ts"
import { vendorTargetOf } from "../../../src/app/batch/VendorTargets.ts"

const upstream = (name: string, protocol: string, batch: boolean) =>
  ({
    name,
    protocol,
    baseUrl: `https://${name}.example`,
    ...(batch ? { batch: true } : {})
  }) as unknown as UpstreamConfig

const openai = upstream("openai", "openai", true)
const anthropic = upstream("anthropic", "anthropic", true)
const gemini = upstream("gemini", "gemini", false)
const plainOpenai = upstream("plain", "openai", false)

const model = (id: string, plugin: string, upstreams: ReadonlyArray<UpstreamConfig>) =>
  ({ id, plugin, upstreams, upstreamModel: `${id}-upstream`, pricing: {}, maxOutputTokens: undefined }) as ModelConfig

const models = [
  model("chat-anthropic", "text", [anthropic]),
  model("embed-openai", "embeddings", [plainOpenai, openai]),
  model("embed-anthropic", "embeddings", [anthropic]),
  model("embed-gemini", "embeddings", [gemini]),
  model("embed-plain", "embeddings", [plainOpenai])
]

describe("vendor targets", () => {
  it("sends a text model's chat lines to its batch-capable upstream, whatever its vendor", () => {
    for (const endpoint of ["/v1/chat/completions", "/v1/responses", "/v1/messages"] as const) {
      assert.strictEqual(vendorTargetOf(models, endpoint, "chat-anthropic")?.upstream, anthropic)
    }
  })

  it("sends embeddings lines only to a batch-capable OpenAI upstream, the first in the routing's order", () => {
    assert.deepStrictEqual(vendorTargetOf(models, "/v1/embeddings", "embed-openai"), {
      upstream: openai,
      upstreamModel: "embed-openai-upstream"
    })
    assert.isUndefined(vendorTargetOf(models, "/v1/embeddings", "embed-anthropic"))
    assert.isUndefined(vendorTargetOf(models, "/v1/embeddings", "embed-gemini"))
    assert.isUndefined(vendorTargetOf(models, "/v1/embeddings", "embed-plain"))
    assert.isUndefined(vendorTargetOf(models, "/v1/embeddings", "no-such-model"))
  })
})
