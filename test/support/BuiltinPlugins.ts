/** The built-in plugins over clients that must not be called: for tests of what plugins declare (kinds, prices). */
import { Effect } from "effect"
import { makeGuardedFetcher } from "../../src/adapters/fetch/GuardedFetcher.ts"
import type { UpstreamClient } from "../../src/adapters/upstream/UpstreamClient.ts"
import type { PluginPriceKeys } from "../../src/app/config/ModelPricing.ts"
import { builtinPlugins } from "../../src/PluginsLayer.ts"

const client = { request: () => Effect.die("not called") } as unknown as UpstreamClient["Service"]

export const declaredPlugins = () => builtinPlugins(client, () => Effect.die("not called"), makeGuardedFetcher())

/** Each built-in plugin's id and the price keys its plugin object declares. */
export const builtinPriceKeys = (): Map<string, PluginPriceKeys> =>
  new Map(declaredPlugins().map((plugin) => [plugin.id, plugin.pricingKeys] as const))
