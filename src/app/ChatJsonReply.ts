/**
 * The chat pipeline's last step for a whole (non-streamed) reply: read its usage, price it, present it in the
 * client's protocol, store it when the Responses API asked (before it is delivered, with its bill), and settle.
 */
import { Effect, Result } from "effect"
import { randomUUID } from "node:crypto"
import { isRecord } from "../plugins/text/convert/json.ts"
import { UpstreamFailed } from "./ChatErrors.ts"
import type { ChatInput, ChatResult } from "./ChatGateway.ts"
import type { ChatPlan } from "./ChatPlan.ts"
import { commitDelivered } from "./DeliveredTurn.ts"
import type { CallHold } from "./HeldCall.ts"
import type { ChatDialects } from "./ports/ChatDialects.ts"
import type { ResponseStore } from "./ports/ResponseStore.ts"

export const deliverJson = (
  services: { readonly dialects: ChatDialects["Service"]; readonly store: ResponseStore["Service"] },
  plan: ChatPlan,
  input: ChatInput,
  hold: CallHold,
  reply: { readonly dialect: ChatInput["dialect"]; readonly body: unknown },
  created: number
) =>
  Effect.gen(function* () {
    const fallbackId = `msg_${randomUUID().replaceAll("-", "")}`
    const ir = services.dialects[reply.dialect].readReply(reply.body, { id: fallbackId, model: plan.modelId })
    if (Result.isFailure(ir)) {
      yield* hold.abandon("failed")
      return yield* new UpstreamFailed({
        reason: "unavailable",
        message: "the upstream sent a response the gateway cannot read"
      })
    }
    const usage = ir.success.usage
    const cost = plan.plugin.pricing.price(usage, plan.model)
    const { client } = plan
    // The upstream's own body when the client speaks its protocol (unknown fields kept), else the client's encoding.
    const body: unknown =
      reply.dialect === input.dialect && isRecord(reply.body)
        ? client.present === undefined
          ? { ...reply.body, model: plan.modelId }
          : reply.body
        : client.encodeReply({ ...ir.success, model: plan.modelId }, created, {
            body: input.body,
            responseId: input.responseId
          })
    const presented = isRecord(body)
      ? client.present?.(body, { body: input.body, responseId: input.responseId, model: plan.modelId, created })
      : undefined
    if (input.stored !== undefined && presented?.final !== undefined) {
      // Stored before it is delivered, with its bill; not stored, not delivered and not billed.
      yield* hold.committed
      yield* commitDelivered(services.store, input.stored, presented.final, {
        holdId: hold.holdId,
        accountId: input.key.accountId,
        cost,
        usage
      }).pipe(Effect.tapError(() => hold.abandon("failed")))
    }
    // The upstream was paid and the answer is here: the client gets it even if the bill has to be retried.
    yield* hold.settleDelivered(cost, usage)
    return { _tag: "Json", body: presented === undefined ? body : presented.shown } satisfies ChatResult
  })
