/**
 * A third-party Tollgate plugin of a kind the gateway does not know: document reranking, `POST /v1/rerank`, in the
 * request and response shape Cohere, Jina and Voyage share, billed per search unit. Loaded from the operator config,
 * it gets authentication, the key's model list, rate limits, the hold, the settlement, metrics and the access log
 * from the gateway, with no change to Tollgate itself.
 *
 * A search unit is one query over up to 100 documents, a document longer than 2,000 characters counting once per
 * started 2,000 (Cohere's rule, in characters instead of tokens so the hold needs no tokenizer). The hold is the
 * units the request can cost; the charge is the units the upstream reports billing (`meta.billed_units`), or the
 * same count when it reports none.
 *
 * Runtime imports: `effect` only. Everything from Tollgate is a type, from `@tollgate/plugin-spec` (endpoint, v1).
 */
import type {
  EndpointCall,
  EndpointPlugin,
  EndpointReply,
  Micros,
  PluginFailure,
  PluginModel,
  UpstreamConfig
} from "@tollgate/plugin-spec/endpoint"
import { Effect, Schema } from "effect"

export const RERANK_PLUGIN_ID = "rerank"

export const DOCUMENTS_PER_UNIT = 100
export const CHARACTERS_PER_DOCUMENT = 2_000
export const MAX_DOCUMENTS = 1_000

// ---------------------------------------------------------------------------------------------------------------------
// The request, validated by the gateway with this schema (any Standard Schema works: Zod, Valibot, Effect Schema).

const Document = Schema.Union([Schema.String, Schema.Struct({ text: Schema.String })])

const RerankBody = Schema.Struct({
  model: Schema.NonEmptyString,
  query: Schema.NonEmptyString,
  documents: Schema.Array(Document).check(Schema.isBetweenLength(1, MAX_DOCUMENTS)),
  top_n: Schema.optional(Schema.Int.check(Schema.isGreaterThan(0))),
  return_documents: Schema.optional(Schema.Boolean)
})

export type RerankRequest = typeof RerankBody.Type

/** What a call used: search units (what it costs) and documents (for statements). */
export interface RerankUsage {
  readonly [key: string]: number
  readonly searchUnits: number
  readonly documents: number
}

const textOf = (document: RerankRequest["documents"][number]): string =>
  typeof document === "string" ? document : document.text

/** Search units a request costs: per started 100 documents, a long document counting once per 2,000 characters. */
export const searchUnits = (request: RerankRequest): number => {
  const chunks = request.documents.reduce(
    (sum, document) => sum + Math.max(1, Math.ceil(textOf(document).length / CHARACTERS_PER_DOCUMENT)),
    0
  )
  return Math.ceil(chunks / DOCUMENTS_PER_UNIT)
}

// ---------------------------------------------------------------------------------------------------------------------
// Pricing: `perSearchUnit` (USD per search unit, a price key this plugin declares), in integer micro-dollars.

const perUnit = (model: PluginModel): Micros => model.pricing.perSearchUnit ?? 0n

const whole = (count: number): bigint => (Number.isFinite(count) && count > 0 ? BigInt(Math.ceil(count)) : 0n)

export const rerankPricing: EndpointPlugin<RerankRequest, RerankUsage>["pricing"] = {
  estimate: (request, model) => whole(searchUnits(request)) * perUnit(model),
  price: (usage, model) => whole(usage.searchUnits) * perUnit(model)
}

// ---------------------------------------------------------------------------------------------------------------------
// The call: the first upstream that answers; one that is down, busy or rate limiting hands over to the next.

const failure = (reason: PluginFailure["reason"], message: string): PluginFailure => ({
  _tag: "PluginFailure",
  reason,
  message
})

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

interface RerankResult {
  readonly index: number
  readonly relevance_score: number
  readonly document?: { readonly text: string } | undefined
}

/** The upstream's answer, checked: a result per returned document, each pointing at a document of the request. */
const readReply = (body: unknown, request: RerankRequest): RerankResult[] | PluginFailure => {
  const results = isRecord(body) ? body.results : undefined
  if (!Array.isArray(results)) return failure("unavailable", "the upstream sent a rerank reply without results")
  const read: Array<RerankResult> = []
  for (const result of results) {
    const index = isRecord(result) ? result.index : undefined
    const score = isRecord(result) ? result.relevance_score : undefined
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= request.documents.length) {
      return failure("unavailable", "the upstream sent a result for a document the request does not have")
    }
    if (typeof score !== "number" || !Number.isFinite(score)) {
      return failure("unavailable", "the upstream sent a result without a relevance score")
    }
    const document = request.documents[index] as RerankRequest["documents"][number]
    read.push({
      index,
      relevance_score: score,
      ...(request.return_documents === true ? { document: { text: textOf(document) } } : {})
    })
  }
  return read
}

/** The units the upstream says it billed, when it says so (Cohere's `meta.billed_units.search_units`). */
const billedUnits = (body: unknown): number | undefined => {
  const meta = isRecord(body) ? body.meta : undefined
  const billed = isRecord(meta) ? meta.billed_units : undefined
  const units = isRecord(billed) ? billed.search_units : undefined
  return typeof units === "number" && Number.isInteger(units) && units >= 0 ? units : undefined
}

const callOne = (call: EndpointCall<RerankRequest>, upstream: UpstreamConfig) =>
  Effect.gen(function* () {
    const { request, model } = call
    const response = yield* call.http.request({
      upstream,
      method: "POST",
      path: "/rerank",
      body: JSON.stringify({
        model: model.upstreamModel,
        query: request.query,
        documents: request.documents.map(textOf),
        ...(request.top_n === undefined ? {} : { top_n: request.top_n }),
        return_documents: false
      }),
      signal: call.signal
    })
    const body = yield* response.json
    const results = readReply(body, request)
    if (!Array.isArray(results)) return yield* Effect.fail(results)
    const bound = searchUnits(request)
    // Never more than the hold: a vendor reporting more units than the request can cost is billed the bound.
    const units = Math.min(billedUnits(body) ?? bound, bound)
    return {
      body: {
        object: "list",
        id: `rerank-${call.requestId}`,
        model: model.id,
        results,
        usage: { search_units: units }
      },
      usage: { searchUnits: units, documents: request.documents.length }
    } satisfies EndpointReply<RerankUsage>
  })

/** Worth trying the next upstream: the same request may succeed there. A refusal of the request would not. */
const handsOver = (error: PluginFailure): boolean =>
  error.reason === "unavailable" ||
  error.reason === "overloaded" ||
  error.reason === "rate_limited" ||
  error.reason === "timeout"

const invoke = (call: EndpointCall<RerankRequest>): Effect.Effect<EndpointReply<RerankUsage>, PluginFailure> => {
  if (call.signal.aborted) return Effect.fail(failure("cancelled", "the request was cancelled"))
  const [first, ...rest] = call.model.upstreams
  if (first === undefined) return Effect.fail(failure("misconfigured", `model ${call.model.id} names no upstream`))
  return rest.reduce(
    (attempt, upstream) =>
      attempt.pipe(
        Effect.catch((error: PluginFailure) =>
          handsOver(error) && !call.signal.aborted ? callOne(call, upstream) : Effect.fail(error)
        )
      ),
    callOne(call, first)
  )
}

export const rerankPlugin: EndpointPlugin<RerankRequest, RerankUsage> = {
  specificationVersion: "v1",
  id: RERANK_PLUGIN_ID,
  family: "rerank",
  kind: "rerank",
  endpoint: { method: "POST", path: "/v1/rerank" },
  request: Schema.toStandardSchemaV1(RerankBody),
  pricingKeys: { allowed: ["perSearchUnit"], required: ["perSearchUnit"] },
  pricing: rerankPricing,
  invoke
}

export default rerankPlugin
