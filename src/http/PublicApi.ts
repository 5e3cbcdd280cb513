/** Health probes, the model list and the answers for paths nobody serves. */
import { clip } from "../domain/Quoted.ts"
import { Duration, Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import { type CatalogModel, ModelCatalog } from "../app/ModelCatalog.ts"
import { PluginRegistry } from "../app/PluginRegistry.ts"
import { apiError, notFound } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { openAiModelPrices } from "./ModelPrices.ts"
import { json, route } from "./Route.ts"

/** OpenAI's model object, with the prices a call and a batch line of the model pay (extra fields, decimal strings). */
const openAiModel = (registry: PluginRegistry["Service"], m: CatalogModel) => ({
  id: m.id,
  object: "model",
  created: m.created,
  owned_by: m.ownedBy,
  ...openAiModelPrices(registry.resolve(m.id))
})

const models = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const anthropic = request.headers["anthropic-version"] !== undefined
  yield* authenticate(anthropic ? "anthropic" : "openai")
  const catalog = (yield* ModelCatalog).models
  if (anthropic) {
    return json({
      data: catalog.map((m) => ({
        type: "model",
        id: m.id,
        display_name: m.displayName,
        created_at: new Date(m.created * 1000).toISOString()
      })),
      has_more: false,
      first_id: catalog[0]?.id ?? null,
      last_id: catalog.at(-1)?.id ?? null
    })
  }
  const registry = yield* PluginRegistry
  return json({ object: "list", data: catalog.map((m) => openAiModel(registry, m)) })
})

/** One model, in OpenAI's or Anthropic's shape (`GET /v1/models/{id}`). */
const oneModel = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const anthropic = request.headers["anthropic-version"] !== undefined
  yield* authenticate(anthropic ? "anthropic" : "openai")
  // The router has decoded the parameter already: decoding it again would throw on an id such as `%ff` (sent `%25ff`).
  const id = (yield* HttpRouter.params).id ?? ""
  const model = (yield* ModelCatalog).models.find((m) => m.id === id)
  if (model === undefined) {
    return yield* notFound(
      `The model \`${clip(id)}\` does not exist or you do not have access to it.`,
      "model_not_found"
    )
  }
  return anthropic
    ? json({
        type: "model",
        id: model.id,
        display_name: model.displayName,
        created_at: new Date(model.created * 1000).toISOString()
      })
    : json(openAiModel(yield* PluginRegistry, model))
})

/** Google's list shape, for `@google/genai`'s `models.list` pointed at the gateway. */
const googleModels = Effect.gen(function* () {
  yield* authenticate("gemini")
  const catalog = (yield* ModelCatalog).models
  return json({
    models: catalog.map((m) => ({ name: `models/${m.id}`, baseModelId: m.id, displayName: m.displayName }))
  })
})

/** The paths served under `/v1`, written without it: a client whose base URL lacks the prefix sends these. */
const V1_PATHS: ReadonlyArray<RegExp> = [
  /^\/chat\/completions$/,
  /^\/messages(\/count_tokens)?$/,
  /^\/models(\/[^/:]+)?$/,
  /^\/images\/(generations|edits)$/,
  /^\/videos(\/[^/]+(\/content)?)?$/,
  /^\/embeddings$/,
  /^\/audio\/(transcriptions|speech)$/
]

/** The native Gemini path, served under `/v1beta`, written without it. */
const V1BETA_PATH = /^\/models\/[^/]+:(generateContent|streamGenerateContent)$/

/**
 * A 404 that says how to reach the endpoint the client most likely meant: a base URL with one `/v1` too many, or
 * missing its `/v1` (or `/v1beta` for the native path), is the usual misconfiguration, and "unknown path" alone does
 * not say which.
 */
const unknownPath = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = new URL(request.url, "http://x").pathname
  const method = request.method
  if (path.startsWith("/v1/v1/")) {
    return yield* notFound(
      `unknown path ${path}: remove the extra /v1 — the messages base URL is the host root (the SDK appends /v1/messages itself), the chat-completions base URL ends in /v1`,
      "unknown_path"
    )
  }
  if (V1BETA_PATH.test(path)) {
    return yield* notFound(
      `unknown path ${method} ${path}: add /v1beta — the native path is ${method} /v1beta${path} (a Google client's base URL is the host root)`,
      "unknown_path"
    )
  }
  if (path.startsWith("/v1/") && V1BETA_PATH.test(path.slice(3))) {
    return yield* notFound(
      `unknown path ${method} ${path}: the native path is under /v1beta, not /v1 — ${method} /v1beta${path.slice(3)}`,
      "unknown_path"
    )
  }
  if (V1_PATHS.some((known) => known.test(path))) {
    return yield* notFound(
      `unknown path ${method} ${path}: add /v1 — the endpoint is ${method} /v1${path} (an OpenAI-style client's base URL ends in /v1; a messages client's is the host root)`,
      "unknown_path"
    )
  }
  return yield* notFound(`unknown path ${method} ${path}`, "unknown_path")
})

export const layer = Layer.mergeAll(
  // Whoever checks that something listens here gets a 200 (Claude Code sends `HEAD /`).
  route("GET", "/", Effect.succeed(json({ object: "tollgate", status: "ok", console: "/console" }))),
  route("GET", "/healthz", Effect.succeed(json({ status: "ok" }))),
  route(
    "GET",
    "/readyz",
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`SELECT 1`.pipe(
        Effect.timeout(Duration.seconds(2)),
        Effect.mapError(() => apiError(503, "the database is not reachable", { code: "not_ready" }))
      )
      return json({ status: "ready" })
    })
  ),
  route("GET", "/v1/models", models),
  route("GET", "/v1/models/:id", oneModel),
  route("GET", "/v1beta/models", googleModels),
  // Every method but HEAD: the router answers a HEAD that no route of its own matches with the GET route of its path,
  // so `HEAD /healthz` is the probe's and an unknown path's HEAD still reaches this 404.
  ...(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const).map((method) => route(method, "*", unknownPath))
)
