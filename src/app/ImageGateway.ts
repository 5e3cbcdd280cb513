/**
 * The images pipeline (`/v1/images/generations`, `/v1/images/edits`), with the chat gateway's ledger discipline:
 * resolve the model to its plugin, check the key's allow-list, hold the plugin's estimate, invoke, and settle from the
 * upstream's usage — or release the whole hold when no image was delivered (`rejected` for a refusal such as a
 * moderation block, `failed` for an outage, `cancelled` when the client went away). Images pass through once and are
 * never stored: the ledger records the usage and the charge only.
 */
import { Context, Effect, Layer } from "effect"
import { TokenCounter } from "./ports/TokenCounter.ts"
import type { ImageOperation, ImageRequest, ImagesReply, PluginModel } from "../plugins/ModelPlugin.ts"
import { type HeldCallError, heldCallServices, runHeldCall } from "./HeldCall.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { traced } from "./Traced.ts"

export interface ImagesInput {
  readonly operation: ImageOperation
  /** The model id the client named. */
  readonly model: string
  readonly request: ImageRequest
  readonly key: AuthenticatedKey
  readonly requestId: string
}

export type ImagesError = HeldCallError

export class ImageGateway extends Context.Service<
  ImageGateway,
  { readonly images: (input: ImagesInput) => Effect.Effect<ImagesReply, ImagesError> }
>()("tollgate/app/ImageGateway") {
  static readonly layer = Layer.effect(
    ImageGateway,
    Effect.gen(function* () {
      const held = yield* heldCallServices
      const tokens = yield* TokenCounter

      const images = Effect.fnUntraced(function* (input: ImagesInput) {
        const called = input.operation === "edit" ? "POST /v1/images/edits" : "POST /v1/images/generations"
        return yield* runHeldCall(held, input, { kind: "images", called }, ({ plugin, model }) =>
          Effect.succeed({
            amount: plugin.pricing.estimate(
              {
                operation: input.operation,
                request: input.request,
                promptTokens: tokens.count(input.request.prompt)
              },
              model
            ),
            call: (signal: AbortSignal, deployment: PluginModel) => {
              const call = {
                model: deployment,
                operation: input.operation,
                request: input.request,
                requestId: input.requestId,
                signal
              }
              return input.operation === "edit" ? plugin.edit(call) : plugin.generate(call)
            },
            bill: (reply: ImagesReply) =>
              Effect.succeed({
                cost: plugin.pricing.price(reply.usage, model),
                usage: { ...reply.usage, images: reply.images.length, operation: input.operation }
              })
          })
        )
      }, traced("ImageGateway.images"))

      return ImageGateway.of({ images })
    })
  )
}
