/**
 * Hosted tools (`ChatRequest.hostedTools`: a tool the client asks the vendor itself to run, such as a Responses
 * client's `web_search`) on a text model: served where the upstream speaks the client's own protocol (it is sent the
 * client's body), a web search also by an `anthropic` upstream (its own search, see anthropicWebSearch.ts) and by a
 * `gemini` one when the request has no function tools (Google Search grounding, see geminiWebSearch.ts), and
 * elsewhere left out of the upstream call with a note for the client (`x-tollgate-warning`), or
 * refused before anything is held when the operator set the model's `hostedTools` to `refuse`.
 */
import type { ChatCall, ChatRequest, PluginFailure, PluginModel } from "../ModelPlugin.ts"
import { pluginFailure } from "../ModelPlugin.ts"
import { geminiRunsWebSearch } from "./convert/geminiWebSearch.ts"

export type TextProtocol = "openai" | "anthropic" | "gemini" | "openai-responses"

export const isTextProtocol = (protocol: string): protocol is TextProtocol =>
  protocol === "openai" || protocol === "anthropic" || protocol === "gemini" || protocol === "openai-responses"

/** The dialect an upstream protocol answers in. */
export const dialectOf = (protocol: TextProtocol) => (protocol === "openai-responses" ? "responses" : protocol)

type Hosted = NonNullable<ChatRequest["hostedTools"]>[number]

/** Whether an upstream of `protocol` runs `tool` of `request` for a client of `dialect`. */
const serves = (protocol: string, dialect: string, tool: Hosted, request: ChatRequest): boolean => {
  if (!isTextProtocol(protocol)) return false
  if (dialectOf(protocol) === dialect) return true
  if (!tool.type.startsWith("web_search")) return false
  return protocol === "anthropic" || (protocol === "gemini" && geminiRunsWebSearch(request))
}

/** The hosted tools some upstream of the model would not run. */
const unserved = (client: ChatCall["client"], request: ChatRequest, model: PluginModel): ReadonlyArray<Hosted> =>
  (request.hostedTools ?? []).filter(
    (tool) => !model.upstreams.every((upstream) => serves(upstream.protocol, client.dialect, tool, request))
  )

export const hostedToolRefusal = (
  client: ChatCall["client"],
  request: ChatRequest,
  model: PluginModel
): PluginFailure | undefined => {
  if (model.hostedTools !== "refuse") return undefined
  const first = unserved(client, request, model)[0]
  return first === undefined
    ? undefined
    : pluginFailure(
        "invalid_request",
        `${first.param}: the hosted tool '${first.type}' is not run by this model's upstream, and its operator refuses requests that ask for it`,
        { code: "unsupported_tool", param: first.param }
      )
}

export const hostedToolNotes = (
  client: ChatCall["client"],
  request: ChatRequest,
  model: PluginModel
): ReadonlyArray<string> =>
  model.hostedTools === "refuse"
    ? []
    : unserved(client, request, model).map(
        (tool) => `${tool.param}: the hosted tool '${tool.type}' was left out (this model's upstream does not run it)`
      )
