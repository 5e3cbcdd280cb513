/**
 * The video family's price: output tokens by the vendor's formula (width × height × frames / 1024) at the model's
 * `output` price per million. The hold prices the requested size and length; settlement prices the upstream's
 * reported `completion_tokens`, or the formula on the delivered file when the upstream reports none.
 */
import { costPerMillion } from "../../domain/Money.ts"
import { pixelSize, type VideoRequest, videoTokens } from "../../domain/video/VideoSpec.ts"
import type { PricingRule, VideoUsage } from "../ModelPlugin.ts"

export const videoPricing: PricingRule<VideoRequest, VideoUsage> = {
  estimate: (request, model) =>
    costPerMillion(
      videoTokens(pixelSize(request.resolution, request.ratio), request.seconds),
      model.pricing.output ?? 0n
    ),
  price: (usage, model) => costPerMillion(usage.tokens, model.pricing.output ?? 0n)
}
