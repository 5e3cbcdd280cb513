/**
 * The operator's view of routing: `GET /admin/upstreams` lists every upstream (enabled, or disabled and why) with
 * each deployment it serves (state, cooldown or circuit end, failures in a row, in flight, totals by outcome, error
 * rate and latency), and `POST /admin/upstreams/{name}/disable` and `…/enable` (or `PATCH /admin/upstreams/{name}`
 * with `{"enabled": false}`) take an upstream out of rotation or put it back. An upstream disabled for refused
 * credentials stays out until enabled here.
 */
import { clip } from "../../domain/Quoted.ts"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { PluginRegistry } from "../../app/PluginRegistry.ts"
import { Deployments } from "../../app/routing/Deployments.ts"
import { routedOnly } from "../../app/routing/DeploymentStatus.ts"
import { apiError } from "../ApiError.ts"
import { readJsonAs } from "../RequestBody.ts"
import { HttpSettings, json, route } from "../Route.ts"
import { admin } from "./AdminApi.ts"

/** Every upstream's status, leaving out the deployments of video models, which routing does not serve. */
const routedStatus = Effect.gen(function* () {
  const registry = yield* PluginRegistry
  const upstreams = yield* (yield* Deployments).status
  return routedOnly(upstreams, (model) => registry.resolve(model)?.kind !== "videos")
})

// `deployments` repeats every upstream's deployments as one flat list, for callers that look a deployment up by model.
const list = admin(
  Effect.map(routedStatus, (upstreams) =>
    json({ object: "list", data: upstreams, deployments: upstreams.flatMap((upstream) => upstream.deployments) })
  )
)

const Patch = Schema.Struct({ enabled: Schema.Boolean })

const toggle = (wanted: boolean | "from-body") =>
  admin(
    Effect.gen(function* () {
      const name = (yield* HttpRouter.params).name ?? ""
      const enabled =
        wanted === "from-body"
          ? (yield* readJsonAs(yield* HttpServerRequest.HttpServerRequest, yield* HttpSettings, Patch)).enabled
          : wanted
      const deployments = yield* Deployments
      if (!(yield* deployments.setEnabled(name, enabled))) {
        return yield* apiError(404, `no upstream is named '${clip(name)}'`, { code: "upstream_not_found" })
      }
      const upstream = (yield* routedStatus).find((candidate) => candidate.name === name)
      return json(upstream)
    })
  )

export const layer = Layer.mergeAll(
  route("GET", "/admin/upstreams", list),
  route("POST", "/admin/upstreams/:name/disable", toggle(false)),
  route("POST", "/admin/upstreams/:name/enable", toggle(true)),
  route("PATCH", "/admin/upstreams/:name", toggle("from-body"))
)
