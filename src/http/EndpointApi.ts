/**
 * The endpoints of plugins of new kinds, one route per kind the loaded plugins declare (`POST /v1/rerank`): OpenAI's
 * conventions (bearer key, JSON body naming its `model`, OpenAI error envelopes), with the route's metrics and access
 * log like every built-in endpoint.
 */
import { Effect, Layer } from "effect"
import { type HttpRouter, HttpServerRequest } from "effect/http"
import { EndpointGateway } from "../app/EndpointGateway.ts"
import { type EndpointKind, PluginRegistry } from "../app/PluginRegistry.ts"
import { authenticate } from "./Auth.ts"
import { readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"

// The key is checked before the body is read, so an anonymous client cannot make the gateway parse megabytes.
const handlerOf = ({ kind, path }: EndpointKind) =>
  Effect.gen(function* () {
    const key = yield* authenticate("openai")
    const body = yield* readJson(yield* HttpServerRequest.HttpServerRequest, yield* HttpSettings, "forwarded")
    const reply = yield* (yield* EndpointGateway).call({
      kind,
      called: `POST ${path}`,
      body,
      key,
      requestId: yield* RequestId
    })
    return json(reply)
  })

/** A route per declared kind; none when no plugin declares one. */
export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const registry = yield* PluginRegistry
    return Layer.mergeAll(
      Layer.empty,
      ...registry.endpoints.map((endpoint) =>
        route("POST", endpoint.path as HttpRouter.PathInput, handlerOf(endpoint), "openai")
      )
    )
  })
)
