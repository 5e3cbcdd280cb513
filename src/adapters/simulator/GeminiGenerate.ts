/**
 * Gemini as the real API speaks it: `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`
 * and `:countTokens`. The method sits after a colon inside the last path segment, hence the regex route.
 */
import { splitByTokens } from "../tokenizer/Tokenizer.ts"
import { tallyGeminiContents } from "../tokenizer/ChatTally.ts"
import type { AsyncReply } from "./audio/AudioReply.ts"
import { type CacheKnobs, type PromptCache, promptCache } from "./PromptCache.ts"
import { withPromptTokens } from "./PromptTokens.ts"
import { geminiError } from "./ErrorEnvelopes.ts"
import { arrayField, field, isRecord, type JsonRecord, numberField, stringField } from "./Json.ts"
import {
  conversationSeed,
  type OutputFormat,
  planReply,
  type ReplyPlan,
  type ToolMode,
  type ToolSpec
} from "./Reply.ts"
import { dataFrame, header, json, type SimContext, type SimReply, type SimRequest } from "./SimResponse.ts"
import { signThinking } from "./ThinkingSignature.ts"

const TOKENS_PER_DELTA = 3

/** `/v1beta/models/gemini-2.5-flash:generateContent` → model and method. */
export const GEMINI_ROUTE =
  /^\/(?:v1beta|v1alpha|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/

/** 403 without a key, 400 `API_KEY_INVALID` with a wrong one (Gemini does not answer 401 for a bad key). */
export const checkGeminiAuth = (request: SimRequest, context: SimContext): SimReply | undefined => {
  const bearer = header(request, "authorization")
  const key =
    header(request, "x-goog-api-key") ??
    request.query.get("key") ??
    (bearer?.toLowerCase().startsWith("bearer ") ? bearer.slice(7).trim() : undefined)
  if (key === undefined) {
    return json(
      403,
      geminiError(
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
      )
    )
  }
  if (key === context.apiKey) return undefined
  return json(
    400,
    geminiError(400, "API key not valid. Please pass a valid API key.", [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "API_KEY_INVALID",
        domain: "googleapis.com",
        metadata: { service: "generativelanguage.googleapis.com" }
      }
    ])
  )
}

// Google's JSON parser accepts snake_case field names too.
const either = (value: unknown, camel: string, snake: string): unknown => field(value, camel) ?? field(value, snake)

const partsOf = (content: unknown): ReadonlyArray<JsonRecord> => (arrayField(content, "parts") ?? []).filter(isRecord)

const toolSpecs = (tools: ReadonlyArray<unknown>): ReadonlyArray<ToolSpec> =>
  tools.flatMap((tool) =>
    (
      (either(tool, "functionDeclarations", "function_declarations") as ReadonlyArray<unknown> | undefined) ?? []
    ).flatMap((declaration) => {
      const name = stringField(declaration, "name")
      const schema =
        either(declaration, "parametersJsonSchema", "parameters_json_schema") ?? field(declaration, "parameters") ?? {}
      return name === undefined ? [] : [{ name, schema }]
    })
  )

const toolMode = (toolConfig: unknown): ToolMode => {
  const config = either(toolConfig, "functionCallingConfig", "function_calling_config")
  const mode = stringField(config, "mode")?.toUpperCase()
  const allowed = either(config, "allowedFunctionNames", "allowed_function_names")
  if (mode === "NONE") return { _tag: "None" }
  if (mode === "ANY") {
    return Array.isArray(allowed) && allowed.length === 1 && typeof allowed[0] === "string"
      ? { _tag: "Named", name: allowed[0] }
      : { _tag: "Required" }
  }
  return { _tag: "Auto" }
}

/**
 * `responseMimeType` with `responseSchema` (OpenAPI subset) or `responseJsonSchema` (JSON Schema): JSON, valid
 * against the schema when there is one; `text/x.enum` answers one of the schema's values as plain text.
 */
const outputFormat = (config: unknown): OutputFormat => {
  const mime = stringField(config, "responseMimeType") ?? stringField(config, "response_mime_type")
  const schema =
    either(config, "responseJsonSchema", "response_json_schema") ?? either(config, "responseSchema", "response_schema")
  if (mime === "text/x.enum" && schema !== undefined) return { _tag: "Enum", schema }
  if (mime !== "application/json") return { _tag: "Text" }
  return schema === undefined ? { _tag: "JsonObject" } : { _tag: "JsonSchema", schema }
}

const finishReason = (plan: ReplyPlan): string => (plan.finish === "length" ? "MAX_TOKENS" : "STOP")

/**
 * Gemini counts cached tokens inside `promptTokenCount` and names them (`cachedContentTokenCount`) only when there are
 * some; it reports no cache writes.
 */
const cachedOf = (cache: PromptCache) => (cache.read > 0 ? { cachedContentTokenCount: cache.read } : {})

const usageOf = (promptTokens: number, plan: ReplyPlan, cache: PromptCache) => {
  const candidates = plan.outputTokens - plan.thinkingTokens
  return {
    promptTokenCount: promptTokens,
    candidatesTokenCount: candidates,
    ...(plan.thinkingTokens > 0 ? { thoughtsTokenCount: plan.thinkingTokens } : {}),
    totalTokenCount: promptTokens + plan.outputTokens,
    ...cachedOf(cache),
    promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }],
    ...(cache.read > 0 ? { cacheTokensDetails: [{ modality: "TEXT", tokenCount: cache.read }] } : {})
  }
}

const offersSearch = (tools: ReadonlyArray<unknown>): boolean =>
  tools.some((tool) => either(tool, "googleSearch", "google_search") !== undefined)

/**
 * Google Search grounding, as the simulated model uses it: offered `googleSearch` and asked to search (not answering a
 * function call), it searches once and grounds its answer on one page, reported on the final candidate.
 */
const groundingOf = (
  tools: ReadonlyArray<unknown>,
  userText: string,
  answersTools: boolean
): JsonRecord | undefined => {
  if (!offersSearch(tools) || answersTools || !/\bsearch\b/i.test(userText)) return undefined
  const query = userText.split(/\s+/).filter(Boolean).slice(-8).join(" ")
  const uri = `https://example.com/search?q=${encodeURIComponent(query)}`
  return {
    webSearchQueries: [query],
    searchEntryPoint: { renderedContent: `<div>${query}</div>` },
    groundingChunks: [{ web: { uri, title: `Results for ${query}` } }],
    groundingSupports: []
  }
}

/** All three Gemini methods; `method` comes from `GEMINI_ROUTE`. */
export const geminiGenerate = (
  request: SimRequest,
  context: SimContext,
  model: string,
  method: string,
  replyTokens: number,
  cacheKnobs: CacheKnobs
): SimReply | AsyncReply => {
  const unauthorized = checkGeminiAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  if (request.bodyInvalid || !isRecord(request.body)) {
    return json(400, geminiError(400, "Invalid JSON payload received. Unexpected token."))
  }
  if (context.models !== undefined && !context.models.includes(model)) {
    return json(
      404,
      geminiError(404, `models/${model} is not found for API version v1beta, or is not supported for generateContent.`)
    )
  }
  const body = request.body
  const contents = arrayField(body, "contents")
  if (contents === undefined || contents.length === 0) {
    return json(400, geminiError(400, "* GenerateContentRequest.contents: contents is not specified\n"))
  }
  const tools = arrayField(body, "tools") ?? []
  const systemInstruction = either(body, "systemInstruction", "system_instruction")
  const tally = tallyGeminiContents({
    contents,
    tools,
    ...(systemInstruction === undefined ? {} : { systemInstruction })
  })
  if (method === "countTokens")
    return withPromptTokens(tally, (promptTokens) => json(200, { totalTokens: promptTokens }))

  // Gemini models before Gemini 3 refuse a built-in tool beside function declarations; the simulator does too.
  if (offersSearch(tools) && toolSpecs(tools).length > 0) {
    return json(400, geminiError(400, "Tool use with function calling is unsupported"))
  }
  const config = either(body, "generationConfig", "generation_config")
  const thinkingConfig = either(config, "thinkingConfig", "thinking_config")
  const last = contents[contents.length - 1]
  const responses = partsOf(last).flatMap((part) => {
    const response = either(part, "functionResponse", "function_response")
    return response === undefined ? [] : [JSON.stringify(field(response, "response") ?? {})]
  })
  const lastUser = [...contents]
    .reverse()
    .find(
      (content) =>
        (stringField(content, "role") ?? "user") === "user" &&
        partsOf(content).some((part) => typeof part.text === "string")
    )
  const stop = either(config, "stopSequences", "stop_sequences")
  const lastUserText = partsOf(lastUser)
    .filter((part) => typeof part.text === "string" && part.thought !== true)
    .map((part) => part.text as string)
    .join("\n")
  const grounding = groundingOf(tools, lastUserText, responses.length > 0)
  const plan = planReply({
    lastUserText,
    toolResult: responses.length > 0 ? responses.join("\n") : undefined,
    tools: toolSpecs(tools),
    toolMode: toolMode(either(body, "toolConfig", "tool_config")),
    thinking: either(thinkingConfig, "includeThoughts", "include_thoughts") === true,
    maxTokens: numberField(config, "maxOutputTokens") ?? numberField(config, "max_output_tokens"),
    replyTokens,
    stopSequences: Array.isArray(stop) ? stop.filter((s): s is string => typeof s === "string") : [],
    seed: conversationSeed(contents),
    output: outputFormat(config)
  })
  return withPromptTokens(tally, (promptTokens) => {
    const cache = promptCache(cacheKnobs, promptTokens)
    const responseId = `sim${context.nextId()}`
    const callPart =
      plan.toolCall === undefined
        ? undefined
        : {
            functionCall: { name: plan.toolCall.name, args: plan.toolCall.arguments },
            ...(plan.thinking === undefined
              ? {}
              : { thoughtSignature: signThinking(context.thinkingSecret, plan.thinking) })
          }
    const response = (parts: ReadonlyArray<unknown>, final: boolean) => ({
      candidates: [
        {
          content: { role: "model", parts },
          ...(final ? { finishReason: finishReason(plan) } : {}),
          ...(final && grounding !== undefined ? { groundingMetadata: grounding } : {}),
          index: 0
        }
      ],
      usageMetadata: final
        ? usageOf(promptTokens, plan, cache)
        : { promptTokenCount: promptTokens, totalTokenCount: promptTokens, ...cachedOf(cache) },
      modelVersion: model,
      responseId
    })

    if (method === "generateContent") {
      const parts = [
        ...(plan.thinking === undefined ? [] : [{ text: plan.thinking, thought: true }]),
        ...(plan.text === undefined ? [] : [{ text: plan.text }]),
        ...(callPart === undefined ? [] : [callPart])
      ]
      return json(200, response(parts, true))
    }

    const chunks: Array<ReadonlyArray<unknown>> = [
      ...(plan.thinking === undefined
        ? []
        : splitByTokens(plan.thinking, TOKENS_PER_DELTA).map((text) => [{ text, thought: true }])),
      ...(plan.text === undefined ? [] : splitByTokens(plan.text, TOKENS_PER_DELTA).map((text) => [{ text }])),
      ...(callPart === undefined ? [] : [[callPart]])
    ]
    return geminiStream(request, chunks, response)
  })
}

/**
 * `streamGenerateContent`'s answer from its chunks of parts: SSE with `alt=sse`, otherwise one JSON array of the same
 * chunks; `response(parts, final)` puts the finish reason and the full usage on the last one.
 */
export const geminiStream = (
  request: SimRequest,
  chunks: ReadonlyArray<ReadonlyArray<unknown>>,
  response: (parts: ReadonlyArray<unknown>, final: boolean) => unknown
): SimReply => {
  const head = chunks.slice(0, -1)
  const last = chunks.at(-1) ?? [{ text: "" }]
  if (request.query.get("alt") !== "sse") {
    return json(200, [...head.map((parts) => response(parts, false)), response(last, true)])
  }
  return {
    _tag: "Sse",
    headers: {},
    head: head.map((parts) => dataFrame(response(parts, false))),
    tail: [dataFrame(response(last, true))],
    filler: (n) => dataFrame(response([{ text: ` filler ${n}.` }], false)),
    error: dataFrame(geminiError(503, "The model is overloaded. Please try again later.")),
    malformed: `data: {"candidates":[{"content":{"role":"model","parts":[{"text":\n\n`
  }
}
