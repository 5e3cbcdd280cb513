/**
 * The images pipeline (`/v1/images/generations`, `/v1/images/edits`), with the chat gateway's ledger discipline:
 * resolve the model to its plugin, check the key's allow-list, hold the plugin's estimate, invoke, and settle from the
 * upstream's usage — or release the whole hold when no image was delivered (`rejected` for a refusal such as a
 * moderation block, `failed` for an outage, `cancelled` when the client went away). Images pass through once and are
 * never stored: the ledger records the usage and the charge only.
 */
import { Context, Effect, Exit, Layer } from "effect"
import { countText } from "../adapters/tokenizer/Tokenizer.ts"
import type { ImageOperation, ImageRequest, ImagesReply, PluginFailure } from "../plugins/ModelPlugin.ts"
import { PluginRegistry, wrongEndpointMessage } from "../plugins/PluginRegistry.ts"
import {
  InvalidChatRequest,
  ModelNotAllowed,
  ModelNotFound,
  type UpstreamFailed,
  upstreamFailed
} from "./ChatErrors.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { Ledger } from "./Ledger.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import type { StoreUnavailable } from "./StoreErrors.ts"

export interface ImagesInput {
  readonly operation: ImageOperation
  /** The model id the client named. */
  readonly model: string
  readonly request: ImageRequest
  readonly key: AuthenticatedKey
  readonly requestId: string
}

export type ImagesError =
  | ModelNotFound
  | ModelNotAllowed
  | InvalidChatRequest
  | UpstreamFailed
  | LedgerRejected
  | StoreUnavailable

const callFailed = upstreamFailed

/** A refusal of the request itself (4xx other than rate limits) versus a failure to serve it. */
const releaseReason = (exit: Exit.Exit<unknown, PluginFailure>) => {
  if (Exit.hasInterrupts(exit)) return "cancelled" as const
  const failure = Exit.findErrorOption(exit)
  if (
    failure._tag === "Some" &&
    failure.value.status >= 400 &&
    failure.value.status < 500 &&
    failure.value.status !== 429
  ) {
    return "rejected" as const
  }
  return "failed" as const
}

export class ImageGateway extends Context.Service<
  ImageGateway,
  { readonly images: (input: ImagesInput) => Effect.Effect<ImagesReply, ImagesError> }
>()("tollgate/app/ImageGateway") {
  static readonly layer = Layer.effect(
    ImageGateway,
    Effect.gen(function* () {
      const registry = yield* PluginRegistry
      const ledger = yield* Ledger

      const images = Effect.fn("ImageGateway.images")(function* (input: ImagesInput) {
        const entry = registry.resolve(input.model)
        if (entry === undefined) return yield* new ModelNotFound({ model: input.model })
        if (input.key.models !== null && !input.key.models.includes(input.model)) {
          return yield* new ModelNotAllowed({ model: input.model })
        }
        if (entry.kind !== "images") {
          return yield* new InvalidChatRequest({ param: "model", message: wrongEndpointMessage(input.model, "chat") })
        }
        const { plugin, model } = entry
        const estimate = plugin.pricing.estimate(
          { operation: input.operation, request: input.request, promptTokens: countText(input.request.prompt) },
          model
        )
        const { holdId } = yield* ledger.placeHold({
          accountId: input.key.accountId,
          amount: estimate,
          keyId: input.key.keyId,
          keySpendLimit: input.key.spendLimit,
          model: input.model,
          plugin: plugin.id,
          requestId: input.requestId
        })
        const abort = new AbortController()
        const call = {
          model,
          operation: input.operation,
          request: input.request,
          requestId: input.requestId,
          signal: abort.signal
        }
        const reply = yield* (input.operation === "edit" ? plugin.edit(call) : plugin.generate(call)).pipe(
          Effect.onInterrupt(() => Effect.sync(() => abort.abort())),
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? Effect.void
              : ledger.release(input.key.accountId, holdId, releaseReason(exit)).pipe(Effect.ignore)
          ),
          Effect.mapError(callFailed)
        )
        yield* ledger.settle(input.key.accountId, holdId, plugin.pricing.price(reply.usage, model), {
          ...reply.usage,
          images: reply.images.length,
          operation: input.operation
        })
        return reply
      })

      return ImageGateway.of({ images })
    })
  )
}
