/**
 * The upstream HTTP capability handed to plugins of new kinds (the plugin spec's `UpstreamHttp`). A port: the
 * composition root provides it over the gateway's upstream client, so `app` names it without reaching an adapter.
 */
import type { UpstreamHttp } from "@tollgate/plugin-spec"
import { Context } from "effect"

export class PluginHttp extends Context.Service<PluginHttp, UpstreamHttp>()("tollgate/app/PluginHttp") {}
