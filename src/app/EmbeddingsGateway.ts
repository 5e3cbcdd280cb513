/**
 * The embeddings pipeline (`/v1/embeddings`), with the images gateway's ledger discipline: resolve the model to its
 * plugin, check the key's allow-list and the plugin's kind, hold the plugin's estimate for the inputs as the tokenizer
 * counts them, invoke, and settle from the upstream's `prompt_tokens` — or release the whole hold when no vector was
 * delivered (`rejected` for a refusal of the request, `failed` for an outage, `cancelled` when the client went away).
 */
import { Context, Effect, Layer } from "effect"
import { TokenCounter } from "./ports/TokenCounter.ts"
import type { EmbeddingInput, EmbeddingsReply, EmbeddingsRequest } from "../plugins/ModelPlugin.ts"
import { PluginRegistry } from "./PluginRegistry.ts"
import { UpstreamFailed } from "./ChatErrors.ts"
import { callUnderHold, type HeldCallError, resolveModel } from "./HeldCall.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { Ledger } from "./Ledger.ts"
import { traced } from "./Traced.ts"

export interface EmbeddingsInput {
  /** The model id the client named. */
  readonly model: string
  readonly request: EmbeddingsRequest
  readonly key: AuthenticatedKey
  readonly requestId: string
}

export type EmbeddingsError = HeldCallError

/** Input tokens for the hold: the tokenizer's count of each text, the length of each pre-tokenized array. */
const countInputs = (tokens: TokenCounter["Service"], inputs: ReadonlyArray<EmbeddingInput>): Effect.Effect<number> => {
  const texts: Array<string> = []
  let tokenIds = 0
  for (const input of inputs) {
    if (input._tag === "Text") texts.push(input.text)
    else tokenIds += input.tokens.length
  }
  return Effect.map(tokens.countMany(texts), (counted) => counted + tokenIds)
}

export class EmbeddingsGateway extends Context.Service<
  EmbeddingsGateway,
  { readonly embed: (input: EmbeddingsInput) => Effect.Effect<EmbeddingsReply, EmbeddingsError> }
>()("tollgate/app/EmbeddingsGateway") {
  static readonly layer = Layer.effect(
    EmbeddingsGateway,
    Effect.gen(function* () {
      const registry = yield* PluginRegistry
      const ledger = yield* Ledger
      const tokens = yield* TokenCounter

      const embed = Effect.fnUntraced(function* (input: EmbeddingsInput) {
        const { plugin, model } = yield* resolveModel(
          registry,
          "embeddings",
          input.model,
          input.key,
          "POST /v1/embeddings"
        )
        const inputTokens = yield* countInputs(tokens, input.request.inputs)
        const estimate = plugin.pricing.estimate({ request: input.request, inputTokens }, model)
        const { holdId, reply } = yield* callUnderHold(ledger, input, plugin.id, estimate, (signal) =>
          plugin.embed({ model, request: input.request, inputTokens, requestId: input.requestId, signal })
        )
        if (reply.vectors.length !== input.request.inputs.length) {
          // A reply the client cannot match to its inputs is not delivered: nothing is charged for it.
          yield* ledger.release(input.key.accountId, holdId, "failed")
          return yield* new UpstreamFailed({
            reason: "unavailable",
            message: `the upstream returned ${reply.vectors.length} embeddings for ${input.request.inputs.length} inputs`
          })
        }
        yield* ledger.settleDelivered(
          input.key.accountId,
          holdId,
          plugin.pricing.price({ promptTokens: reply.promptTokens }, model),
          { promptTokens: reply.promptTokens, inputs: input.request.inputs.length, estimatedTokens: inputTokens }
        )
        return reply
      }, traced("EmbeddingsGateway.embed"))

      return EmbeddingsGateway.of({ embed })
    })
  )
}
