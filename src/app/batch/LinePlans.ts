/**
 * What a batch line is on its endpoint, planned exactly as the interactive call plans it: the model for the key, the
 * body read the endpoint's way, the estimate (at batch prices) — and the call, which answers the body the client would
 * have had and its price. Chat lines (OpenAI's chat format, the Responses API's, or Anthropic's Messages for a message
 * batch) go through `app/ChatPlan.ts`, the deployments' routing and `app/ChatJsonReply.ts`;
 * embeddings lines through `app/EmbeddingsBody.ts` and the plugin's `embed`, as `app/EmbeddingsGateway.ts` calls it.
 * Submit uses the plan to refuse a line; the worker plans again and runs it.
 */
import { Clock, Effect, Exit, Result } from "effect"
import { randomUUID } from "node:crypto"
import { type LineEndpoint, MESSAGES_ENDPOINT } from "../../domain/batch/BatchInput.ts"
import type { RefundReason } from "../../domain/ledger/LedgerEvent.ts"
import type { Micros } from "../../domain/Money.ts"
import type {
  ChatCall,
  Dialect,
  EmbeddingsCall,
  EmbeddingsPlugin,
  EmbeddingsReply,
  PluginFailure,
  PluginModel
} from "../../plugins/ModelPlugin.ts"
import { deliverJson } from "../ChatJsonReply.ts"
import type { ChatInput } from "../ChatGateway.ts"
import { planChat } from "../ChatPlan.ts"
import { embeddingsBody, readEmbeddingsRequest } from "../EmbeddingsBody.ts"
import { type CallHold, type HeldCallServices, resolveModel } from "../HeldCall.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { ChatDialects } from "../ports/ChatDialects.ts"
import type { ResponseStore } from "../ports/ResponseStore.ts"
import type { TokenCounter } from "../ports/TokenCounter.ts"
import type { VendorCall, VendorReply } from "../ports/VendorBatches.ts"
import type { makeTurnBuilder } from "../responses/TurnBuilder.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import { statusOfFailure } from "../FailureStatus.ts"
import { batchPriced } from "./BatchPricing.ts"

type TurnBuilder = ReturnType<typeof makeTurnBuilder>

export interface LineServices extends HeldCallServices {
  readonly dialects: ChatDialects["Service"]
  readonly responses: ResponseStore["Service"]
  readonly tokens: TokenCounter["Service"]
  /** The Responses API's turn builder (app/responses/TurnBuilder.ts), as `POST /v1/responses` builds its turns. */
  readonly turns: TurnBuilder
  /** The part of each deployment's capacity a line's call may take (`RouteHint.batchSharePercent`; the worker's). */
  readonly batchSharePercent?: number | undefined
}

/** Why a line cannot run at all, before anything is held; `param` is the body's field. */
export interface PlanRefusal {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly param: string | null
}

/** Why a call that ran (under its hold) has no answer to bill; the hold goes back for `release`. */
export interface LineFailure {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly release: RefundReason
  /** Every deployment was at its limits (or the batch's share of them): the line waits for a later round. */
  readonly wait: boolean
}

/** A line's answer as the client would have had it, and its price. */
export interface LineAnswer {
  readonly body: unknown
  readonly cost: Micros
  readonly usage: unknown
}

export interface LinePlan {
  readonly modelId: string
  readonly pluginId: string
  /** Held for the line, at batch prices. */
  readonly amount: Micros
  readonly run: Effect.Effect<LineAnswer, LineFailure>
  /** For a vendor batch (VendorLines.ts): the line's call to a deployment, and how the vendor's reply is delivered. */
  readonly vendor: {
    /** The call to `upstream` (serving the model as `upstreamModel`), as routing would hand it to the plugin. */
    readonly call: (upstream: PluginModel["upstreams"][number], upstreamModel: string) => VendorCall
    readonly deliver: (reply: VendorReply) => Effect.Effect<LineAnswer, LineFailure>
  }
}

const refused = (error: { readonly _tag: string; readonly message?: string; readonly param?: string | null }) => {
  switch (error._tag) {
    case "ModelNotFound":
      return { status: 404, code: "model_not_found", message: "the model does not exist", param: "model" }
    case "ModelNotAllowed":
      return {
        status: 403,
        code: "model_not_allowed",
        message: "the batch's key may not use this model",
        param: "model"
      }
    default:
      return { status: 400, code: "invalid_request", message: error.message ?? "refused", param: error.param ?? null }
  }
}

const failedCall = (failure: PluginFailure): LineFailure => ({
  status: statusOfFailure(failure.reason),
  code: failure.code ?? failure.reason,
  message: failure.message,
  release: failure.reason === "invalid_request" ? "rejected" : "failed",
  wait: failure.code === "deployments_saturated"
})

const unreadable: LineFailure = {
  status: 502,
  code: "upstream_unreadable",
  message: "the upstream sent a response the gateway cannot read",
  release: "failed",
  wait: false
}

/** A hold that only remembers what deliverJson asks of it: the line's commit then writes it with the result. */
const deferredHold = (holdId: string) => {
  const seen: { settled?: { cost: Micros; usage: unknown } } = {}
  const hold: CallHold = {
    holdId,
    committed: Effect.void,
    settleDelivered: (cost, usage) =>
      Effect.sync(() => {
        seen.settled = { cost, usage }
      }),
    abandon: () => Effect.void
  }
  return { hold, seen }
}

const chatPlan = (
  services: LineServices,
  dialect: ChatInput["dialect"],
  key: AuthenticatedKey,
  body: Readonly<Record<string, unknown>>,
  requestId: string,
  turn: Pick<ChatInput, "request" | "responseId"> = {}
) =>
  Effect.gen(function* () {
    const chat: ChatInput = { dialect, body, key, requestId, ...turn }
    const planned = yield* planChat(services.registry, services.dialects, chat).pipe(Effect.mapError(refused))
    const discount = services.registry.resolve(planned.modelId)?.batchDiscountPercent
    const plan = { ...planned, model: batchPriced(planned.model, discount) }
    const batchSharePercent = services.batchSharePercent
    const call = (deployment: PluginModel): ChatCall => ({
      model: deployment,
      request: plan.request,
      client: plan.clientCall,
      requestId,
      signal: new AbortController().signal
    })
    const deliver = (reply: { readonly dialect: Dialect; readonly body: unknown }) =>
      Effect.gen(function* () {
        const { hold, seen } = deferredHold(requestId)
        const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const services_ = { dialects: services.dialects, store: services.responses }
        const delivered = yield* Effect.result(deliverJson(services_, plan, chat, hold, reply, created))
        if (delivered._tag === "Failure" || delivered.success._tag !== "Json" || seen.settled === undefined) {
          return yield* Effect.fail(unreadable)
        }
        return { body: delivered.success.body, ...seen.settled } satisfies LineAnswer
      })
    const run = Effect.gen(function* () {
      const called = yield* Effect.exit(
        services.deployments.route(plan.model, { ...plan.hint, batchSharePercent }, (deployment) =>
          plan.plugin.invoke(call(deployment))
        )
      )
      if (Exit.isFailure(called)) {
        const failure = Exit.findErrorOption(called)
        return yield* Effect.fail(failure._tag === "Some" ? failedCall(failure.value) : unreadable)
      }
      const reply = called.value
      if (reply._tag !== "Body") return yield* Effect.fail(unreadable)
      return yield* deliver(reply)
    })
    const amount = plan.plugin.pricing.estimate({ request: plan.request, inputTokens: plan.inputTokens }, plan.model)
    return {
      modelId: plan.modelId,
      pluginId: plan.plugin.id,
      amount,
      run,
      vendor: {
        call: (upstream, upstreamModel) => ({
          _tag: "Chat",
          call: call({ ...plan.model, upstreams: [upstream], upstreamModel })
        }),
        deliver: (reply) => (reply._tag === "Chat" ? deliver(reply) : Effect.fail(unreadable))
      }
    } satisfies LinePlan
  })

/** An embeddings reply as the client's embeddings object and its price (the model's, at batch prices). */
const embeddingsAnswer =
  (
    read: Effect.Success<ReturnType<typeof readEmbeddingsRequest>>,
    plugin: EmbeddingsPlugin,
    model: PluginModel,
    inputTokens: number
  ) =>
  (reply: EmbeddingsReply): Effect.Effect<LineAnswer, LineFailure> =>
    // A reply the client cannot match to its inputs is not delivered: nothing is charged for it.
    reply.vectors.length !== read.request.inputs.length
      ? Effect.fail(unreadable)
      : Effect.succeed({
          body: embeddingsBody(reply, read.model, read.format),
          cost: plugin.pricing.price({ promptTokens: reply.promptTokens }, model),
          usage: { promptTokens: reply.promptTokens, inputs: read.request.inputs.length, estimatedTokens: inputTokens }
        })

const embeddingsPlan = (
  services: LineServices,
  key: AuthenticatedKey,
  body: Record<string, unknown>,
  requestId: string
) =>
  Effect.gen(function* () {
    const read = yield* readEmbeddingsRequest(body).pipe(Effect.mapError(refused))
    const entry = yield* resolveModel(services.registry, "embeddings", read.model, key, "POST /v1/embeddings").pipe(
      Effect.mapError(refused)
    )
    const { plugin } = entry
    const model = batchPriced(entry.model, entry.batchDiscountPercent)
    const texts = read.request.inputs.flatMap((input) => (input._tag === "Text" ? [input.text] : []))
    const tokenIds = read.request.inputs.reduce(
      (n, input) => n + (input._tag === "Tokens" ? input.tokens.length : 0),
      0
    )
    const inputTokens = (yield* services.tokens.countMany(texts)) + tokenIds
    const call = (deployment: PluginModel): EmbeddingsCall => ({
      model: deployment,
      request: read.request,
      inputTokens,
      requestId,
      signal: new AbortController().signal
    })
    const deliver = embeddingsAnswer(read, plugin, model, inputTokens)
    const run = services.deployments
      .route(model, { batchSharePercent: services.batchSharePercent }, (deployment) => plugin.embed(call(deployment)))
      .pipe(Effect.mapError(failedCall), Effect.flatMap(deliver))
    const amount = plugin.pricing.estimate({ request: read.request, inputTokens }, model)
    return {
      modelId: read.model,
      pluginId: plugin.id,
      amount,
      run,
      vendor: {
        call: (upstream, upstreamModel) => ({
          _tag: "Embeddings",
          call: call({ ...model, upstreams: [upstream], upstreamModel })
        }),
        // The vendor's count when it reported one, else the gateway's, as the interactive call bills (the plugin's).
        deliver: (reply) =>
          reply._tag === "Embeddings"
            ? deliver({ vectors: reply.vectors, promptTokens: reply.promptTokens ?? inputTokens })
            : Effect.fail(unreadable)
      }
    } satisfies LinePlan
  })

/** A problem the endpoint reports as `param: detail`, as a refusal naming the field once. */
const fieldRefusal = (found: { readonly param: string; readonly message: string }): PlanRefusal => ({
  status: 400,
  code: "invalid_request",
  message: found.message.startsWith(`${found.param}: `) ? found.message.slice(found.param.length + 2) : found.message,
  param: found.param === "" ? null : found.param
})

/** Fields of a Responses request that need the gateway to keep state for the line, which a batch line has not. */
const NOT_IN_A_BATCH: ReadonlyArray<readonly [string, string]> = [
  ["background", "a batch line runs in the batch; background is not available"],
  ["conversation", "a batch line's response is not stored, so it cannot be added to a conversation"]
]

/**
 * A Responses line: checked and built into a turn as `POST /v1/responses` does (its field checks, the history of a
 * `previous_response_id`, the items it references), then run as a non-streamed call that is not stored: the Response
 * object says `store: false`, whatever the line asked, since no later call can retrieve or continue it.
 */
const responsesPlan = (
  services: LineServices,
  key: AuthenticatedKey,
  body: Record<string, unknown>,
  requestId: string
) =>
  Effect.gen(function* () {
    const found = services.dialects.responses.check?.(body)
    if (found !== undefined) return yield* Effect.fail(fieldRefusal(found))
    for (const [param, message] of NOT_IN_A_BATCH) {
      if (body[param] !== undefined && body[param] !== null && body[param] !== false) {
        return yield* Effect.fail<PlanRefusal>({ status: 400, code: "invalid_request", message, param })
      }
    }
    const turn = yield* services
      .turns(key, body)
      .pipe(Effect.catchTag("InvalidChatRequest", (e) => Effect.fail(refused(e))))
    const responseId = `resp_${randomUUID().replaceAll("-", "")}`
    return yield* chatPlan(services, "responses", key, { ...turn.body, store: false }, requestId, {
      request: turn.request,
      responseId
    })
  })

/** The line's plan on `endpoint`, or why it cannot run; fails only when the store cannot be read. */
export const planLine = (
  services: LineServices,
  endpoint: LineEndpoint,
  key: AuthenticatedKey,
  body: Record<string, unknown>,
  requestId: string
): Effect.Effect<Result.Result<LinePlan, PlanRefusal>, StoreUnavailable> => {
  const planned: Effect.Effect<LinePlan, PlanRefusal | StoreUnavailable> =
    endpoint === "/v1/embeddings"
      ? embeddingsPlan(services, key, body, requestId)
      : endpoint === "/v1/responses"
        ? responsesPlan(services, key, body, requestId)
        : chatPlan(services, endpoint === MESSAGES_ENDPOINT ? "anthropic" : "openai", key, body, requestId)
  return planned.pipe(
    Effect.map((plan) => Result.succeed<LinePlan>(plan)),
    Effect.catch((error) => ("_tag" in error ? Effect.fail(error) : Effect.succeed(Result.fail<PlanRefusal>(error))))
  )
}
