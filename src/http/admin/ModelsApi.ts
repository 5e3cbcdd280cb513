/**
 * `GET /admin/models`: the catalog with each model's kind (which endpoint serves it), plugin and prices, as decimal
 * USD strings per unit of each key the model's plugin bills by (`input`/`output` per 1M tokens, `perCall`, …), and
 * the prices a batch line of the model pays (`batchPricing`, null for a model no batch endpoint serves).
 */
import { Effect } from "effect"
import { ModelCatalog } from "../../app/ModelCatalog.ts"
import { endpointOf, PluginRegistry } from "../../app/PluginRegistry.ts"
import { batchPriceStrings, priceStrings } from "../ModelPrices.ts"
import { json, route } from "../Route.ts"
import { admin } from "./AdminApi.ts"

const models = admin(
  Effect.gen(function* () {
    const catalog = (yield* ModelCatalog).models
    const registry = yield* PluginRegistry
    const data = catalog.map((m) => {
      const resolved = registry.resolve(m.id)
      return {
        id: m.id,
        kind: resolved === undefined ? null : resolved.kind === "endpoint" ? resolved.plugin.kind : resolved.kind,
        endpoint: resolved === undefined ? null : endpointOf(resolved),
        plugin: resolved?.plugin.id ?? null,
        ownedBy: m.ownedBy,
        pricing: priceStrings(resolved?.model.pricing ?? {}),
        batchPricing: batchPriceStrings(resolved)
      }
    })
    return json({ data })
  })
)

export const layer = route("GET", "/admin/models", models)
