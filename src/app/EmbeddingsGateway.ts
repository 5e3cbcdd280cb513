/**
 * The embeddings pipeline (`/v1/embeddings`), with the images gateway's ledger discipline: resolve the model to its
 * plugin, check the key's allow-list and the plugin's kind, hold the plugin's estimate for the inputs as the tokenizer
 * counts them, invoke, and settle from the upstream's `prompt_tokens` — or release the whole hold when no vector was
 * delivered (`rejected` for a refusal of the request, `failed` for an outage, `cancelled` when the client went away).
 */
import { Context, Effect, Layer } from "effect"
import { TokenCounter } from "./ports/TokenCounter.ts"
import type { EmbeddingInput, EmbeddingsReply, EmbeddingsRequest, PluginModel } from "../plugins/ModelPlugin.ts"
import { UpstreamFailed } from "./ChatErrors.ts"
import { type HeldCallError, heldCallServices, runHeldCall } from "./HeldCall.ts"
import type { AuthenticatedKey } from "./Keys.ts"
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
      const held = yield* heldCallServices
      const tokens = yield* TokenCounter

      const embed = Effect.fnUntraced(function* (input: EmbeddingsInput) {
        return yield* runHeldCall(
          held,
          input,
          { kind: "embeddings", called: "POST /v1/embeddings" },
          ({ plugin, model }) =>
            Effect.map(countInputs(tokens, input.request.inputs), (inputTokens) => ({
              amount: plugin.pricing.estimate({ request: input.request, inputTokens }, model),
              call: (signal: AbortSignal, deployment: PluginModel) =>
                plugin.embed({
                  model: deployment,
                  request: input.request,
                  inputTokens,
                  requestId: input.requestId,
                  signal
                }),
              bill: (reply: EmbeddingsReply) =>
                // A reply the client cannot match to its inputs is not delivered: nothing is charged for it.
                reply.vectors.length !== input.request.inputs.length
                  ? Effect.fail(
                      new UpstreamFailed({
                        reason: "unavailable",
                        message: `the upstream returned ${reply.vectors.length} embeddings for ${input.request.inputs.length} inputs`
                      })
                    )
                  : Effect.succeed({
                      cost: plugin.pricing.price({ promptTokens: reply.promptTokens }, model),
                      usage: {
                        promptTokens: reply.promptTokens,
                        inputs: input.request.inputs.length,
                        estimatedTokens: inputTokens
                      }
                    })
            }))
        )
      }, traced("EmbeddingsGateway.embed"))

      return EmbeddingsGateway.of({ embed })
    })
  )
}
