/** Health probes, the model list and the answers for paths nobody serves. */
import { Duration, Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import { ModelCatalog } from "../app/ModelCatalog.ts"
import { apiError, notFound } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { json, route } from "./Route.ts"

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
  return json({
    object: "list",
    data: catalog.map((m) => ({ id: m.id, object: "model", created: m.created, owned_by: m.ownedBy }))
  })
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
    return yield* notFound(`The model \`${id}\` does not exist or you do not have access to it.`, "model_not_found")
  }
  return anthropic
    ? json({
        type: "model",
        id: model.id,
        display_name: model.displayName,
        created_at: new Date(model.created * 1000).toISOString()
      })
    : json({ id: model.id, object: "model", created: model.created, owned_by: model.ownedBy })
})

/** Google's list shape, for `@google/genai`'s `models.list` pointed at the gateway. */
const googleModels = Effect.gen(function* () {
  yield* authenticate("google")
  const catalog = (yield* ModelCatalog).models
  return json({
    models: catalog.map((m) => ({ name: `models/${m.id}`, baseModelId: m.id, displayName: m.displayName }))
  })
})

const unknownPath = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = new URL(request.url, "http://x").pathname
  if (path.startsWith("/v1/v1/")) {
    return yield* notFound(
      `unknown path ${path}: remove the extra /v1 — the messages base URL is the host root (the SDK appends /v1/messages itself), the chat-completions base URL ends in /v1`,
      "unknown_path"
    )
  }
  return yield* notFound(`unknown path ${request.method} ${path}`, "unknown_path")
})

export const layer = Layer.mergeAll(
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
  route("*", "*", unknownPath)
)
