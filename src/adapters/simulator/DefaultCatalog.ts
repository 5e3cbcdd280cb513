/**
 * The catalog served when no operator config is given: an in-process upstream simulator on a loopback port and one
 * text model per upstream protocol (OpenAI chat completions, OpenAI Responses, Anthropic, Gemini), plus the two
 * chat-style image models, the dedicated image model, two video
 * models on the simulator's Ark API, and embeddings (OpenAI and Gemini), transcription and speech models, so
 * `npm start` runs the same adapters, converters and billing as production.
 */
import { noRateLimits } from "../../domain/keys/RateLimits.ts"
import { Effect, Layer, Redacted } from "effect"
import { Simulator } from "./Simulator.ts"
import { makeModelPricing } from "../../app/config/ModelPricing.ts"
import { OperatorConfigDefaults } from "../../app/config/decodeOperatorConfig.ts"
import { OperatorConfig, type OperatorConfigData, type UpstreamConfig } from "../../app/OperatorConfig.ts"

export const SIMULATOR_OWNER = "simulator"

export const simulatorConfig = (baseUrl: string, apiKey: string): OperatorConfigData => {
  const upstream = (name: string, protocol: UpstreamConfig["protocol"], url: string): UpstreamConfig => ({
    name,
    protocol,
    baseUrl: url,
    apiKey: Redacted.make(apiKey),
    timeoutMs: 60_000,
    idleTimeoutMs: 60_000,
    maxConnections: OperatorConfigDefaults.upstreamMaxConnections
  })
  const upstreams = new Map<string, UpstreamConfig>([
    ["sim-openai", upstream("sim-openai", "openai", `${baseUrl}/v1`)],
    ["sim-anthropic", upstream("sim-anthropic", "anthropic", baseUrl)],
    ["sim-gemini", upstream("sim-gemini", "gemini", baseUrl)],
    ["sim-responses", upstream("sim-responses", "openai-responses", `${baseUrl}/v1`)],
    ["sim-ark", upstream("sim-ark", "ark", `${baseUrl}/api/v3`)],
    // No default model uses it; declared so tests and operators can put a model on the OpenAI videos API.
    ["sim-openai-videos", upstream("sim-openai-videos", "openai-videos", `${baseUrl}/v1`)]
  ])
  // USD per 1M tokens, in micro-dollars: input 0.15, output 0.60.
  const pricing = makeModelPricing({ input: 150_000n, output: 600_000n })
  const model = (id: string) => ({
    id,
    plugin: "text",
    upstreams: [upstreams.get(id) as UpstreamConfig],
    upstreamModel: id,
    pricing,
    maxOutputTokens: 4096
  })
  // Chat-style image models: one flat price per call on the Gemini upstream (the simulator draws real PNGs).
  const chatImage = (id: string, perCall: bigint) => ({
    id,
    plugin: "chat-image",
    upstreams: [upstreams.get("sim-gemini") as UpstreamConfig],
    upstreamModel: id,
    pricing: makeModelPricing({ perCall }),
    maxOutputTokens: 8192
  })
  // The dedicated image model: USD 40 per 1M output image tokens, on the OpenAI upstream. Output only, as the spec
  // bills it ("image output tokens are what is charged"); an operator config may still add an input price.
  const dedicatedImage = {
    id: "imggen-2",
    plugin: "dedicated-image",
    upstreams: [upstreams.get("sim-openai") as UpstreamConfig],
    upstreamModel: "imggen-2",
    pricing: makeModelPricing({ output: 40_000_000n }),
    maxOutputTokens: 4096
  }
  // Video models on the Ark upstream, priced per 1M output video tokens: USD 1.40 (fast) and 2.50.
  const video = (id: string, upstreamModel: string, output: bigint) => ({
    id,
    plugin: "video",
    upstreams: [upstreams.get("sim-ark") as UpstreamConfig],
    upstreamModel,
    pricing: makeModelPricing({ output }),
    maxOutputTokens: 4096
  })
  // Embeddings, transcription and speech on the simulator's OpenAI (and Gemini) audio and embeddings routes.
  const onUpstream = (
    id: string,
    plugin: string,
    upstream: string,
    pricing: Parameters<typeof makeModelPricing>[0],
    upstreamModel = id
  ) => ({
    id,
    plugin,
    upstreams: [upstreams.get(upstream) as UpstreamConfig],
    upstreamModel,
    pricing: makeModelPricing(pricing),
    maxOutputTokens: 4096
  })
  return {
    upstreams,
    models: [
      model("sim-openai"),
      model("sim-anthropic"),
      model("sim-gemini"),
      model("sim-responses"),
      chatImage("imgchat-2.5-flash-image", 39_000n),
      chatImage("imgchat-3-pro-image-preview", 134_000n),
      dedicatedImage,
      video("video-model-2.0-fast", "seedance-2-0-fast", 1_400_000n),
      video("video-model-2.0", "seedance-2-0", 2_500_000n),
      // USD 0.02 per 1M input tokens.
      onUpstream("sim-embedding", "embeddings", "sim-openai", { input: 20_000n }),
      onUpstream("sim-embedding-gemini", "embeddings", "sim-gemini", { input: 20_000n }),
      // USD 0.0001 per second of audio; a whisper model upstream, which speaks every format and reports duration.
      onUpstream("sim-transcribe", "transcription", "sim-openai", { perSecond: 100n }, "whisper-1"),
      // USD 15.00 per 1M characters.
      onUpstream("sim-tts", "speech", "sim-openai", { perMillionCharacters: 15_000_000n })
    ],
    plugins: [],
    ledger: { holdTtlSeconds: OperatorConfigDefaults.holdTtlSeconds },
    rateLimits: noRateLimits,
    video: {
      pollIntervalMs: OperatorConfigDefaults.videoPollIntervalMs,
      deadlineMinutes: OperatorConfigDefaults.videoDeadlineMinutes,
      retentionDays: OperatorConfigDefaults.videoRetentionDays
    }
  }
}

/** OperatorConfig backed by a simulator started for this process (closed with the layer). */
export const layer = Layer.effect(
  OperatorConfig,
  Effect.map(Simulator, (simulator) => simulatorConfig(simulator.baseUrl, simulator.apiKey))
).pipe(Layer.provide(Simulator.layer))
