/**
 * `GET /admin/models`: the catalog with each model's kind (which endpoint serves it), plugin and prices, as decimal
 * USD strings per unit (`input`/`output` per 1M tokens, `perCall`, `perSecond` of audio, `perMillionCharacters`).
 */
import { Effect } from "effect"
import { formatPrice, PriceKeys } from "../../app/config/ModelPricing.ts"
import { ModelCatalog } from "../../app/ModelCatalog.ts"
import { ENDPOINT_OF_KIND, PluginRegistry } from "../../plugins/PluginRegistry.ts"
import { json, route } from "../Route.ts"
import { admin } from "./AdminApi.ts"

const models = admin(
  Effect.gen(function* () {
    const catalog = (yield* ModelCatalog).models
    const registry = yield* PluginRegistry
    const data = catalog.map((m) => {
      const resolved = registry.resolve(m.id)
      const pricing: Record<string, string> = {}
      for (const key of PriceKeys) {
        const price = resolved?.model.pricing[key]
        if (price !== undefined) pricing[key] = formatPrice(price)
      }
      return {
        id: m.id,
        kind: resolved?.kind ?? null,
        endpoint: resolved === undefined ? null : ENDPOINT_OF_KIND[resolved.kind],
        plugin: resolved?.plugin.id ?? null,
        ownedBy: m.ownedBy,
        pricing
      }
    })
    return json({ data })
  })
)

export const layer = route("GET", "/admin/models", models)
