/**
 * The built-in dedicated image family (`dedicated-image`): the OpenAI images API (`/images/generations`, and
 * `/images/edits` sent as multipart with the input images the gateway resolved). Images come back only as base64,
 * never as links. Billed per output image token (and input token, where the model prices them) from the upstream's
 * usage; the hold comes from the size × quality table. A moderation rejection is a 400 the client can act on.
 */
import { Buffer } from "node:buffer"
import { Clock, Effect, Result } from "effect"
import type { UpstreamClient } from "../../adapters/upstream/UpstreamClient.ts"
import { OpenAiPaths } from "../../adapters/upstream/UpstreamEndpoints.ts"
import type { UpstreamError } from "../../adapters/upstream/UpstreamError.ts"
import { costPerMillion } from "../../domain/Money.ts"
import type { PriceKeys } from "../ModelPlugin.ts"
import {
  type ImageInput,
  type ImagesCall,
  type ImagesPlugin,
  type ImagesPricingInput,
  type ImagesReply,
  type ImageUsage,
  type PluginFailure,
  type PricingRule,
  pluginFailure
} from "../ModelPlugin.ts"
import { asArray, asCount, asRecord, asString, compact, isRecord, parseJson } from "../text/convert/json.ts"
import { upstreamsFor, onUpstream } from "../UpstreamFailure.ts"
import { checkedType, type ImageFetcher, resolveImageUrl } from "../chat-image/ImageInputs.ts"
import { imageTokensForHold, INPUT_IMAGE_TOKENS } from "./ImageTokens.ts"
import { encodeMultipart, type FormPart } from "./Multipart.ts"

export const DEDICATED_IMAGE_PLUGIN_ID = "dedicated-image"

/** The input types the images API edits. */
export const EDIT_IMAGE_TYPES: ReadonlyArray<string> = ["image/png", "image/jpeg", "image/webp"]

export const dedicatedImagePricing: PricingRule<ImagesPricingInput, ImageUsage> = {
  estimate: ({ request, operation, promptTokens }, model) => {
    const outputTokens = request.n * imageTokensForHold(request.size, request.quality)
    const inputImages = operation === "edit" ? request.images.length + (request.mask === undefined ? 0 : 1) : 0
    const inputTokens = promptTokens + inputImages * INPUT_IMAGE_TOKENS
    return (
      costPerMillion(BigInt(outputTokens), model.pricing.output ?? 0n) +
      costPerMillion(BigInt(inputTokens), model.pricing.input ?? 0n)
    )
  },
  price: (usage, model) =>
    costPerMillion(BigInt(usage.outputTokens), model.pricing.output ?? 0n) +
    costPerMillion(BigInt(usage.inputTokens), model.pricing.input ?? 0n)
}

export const moderationBlocked = pluginFailure(
  "invalid_request",
  "the image request was rejected by the upstream's content moderation; nothing was charged. The check can be wrong: rephrasing the prompt and retrying usually helps",
  { code: "moderation_blocked" }
)

/** The upstream's error code, if its body is OpenAI's envelope. */
const vendorCode = (body: string): string | undefined => asString(asRecord(asRecord(parseJson(body)).error).code)

const moderationRefusal = (error: UpstreamError): PluginFailure | undefined => {
  const reason = error.reason
  return reason._tag === "HttpStatus" && reason.status === 400 && vendorCode(reason.body) === "moderation_blocked"
    ? { ...moderationBlocked, detail: reason.body }
    : undefined
}

const EXTENSIONS: Readonly<Record<string, string>> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" }

interface ResolvedImage {
  readonly data: Uint8Array
  readonly mimeType: string
  readonly filename: string
}

const resolveInput = (
  input: ImageInput,
  where: string,
  fetcher: ImageFetcher,
  signal: AbortSignal,
  accepted: ReadonlyArray<string>
): Effect.Effect<ResolvedImage, PluginFailure> => {
  if (input._tag === "Bytes") {
    return Effect.map(checkedType(input.data, input.mimeType, where, accepted), (mimeType) => ({
      data: input.data,
      mimeType,
      filename: input.filename ?? `image.${EXTENSIONS[mimeType] ?? "png"}`
    }))
  }
  return Effect.map(resolveImageUrl(input.url, where, fetcher, signal, accepted), (image) => ({
    data: Buffer.from(image.data, "base64"),
    mimeType: image.mimeType,
    filename: `image.${EXTENSIONS[image.mimeType] ?? "png"}`
  }))
}

/** The options both operations share, in the upstream's field names. */
const optionFields = (call: ImagesCall): Record<string, string | number | undefined> => {
  const { request } = call
  return {
    model: call.model.upstreamModel,
    prompt: request.prompt,
    n: request.n,
    size: request.size,
    quality: request.quality,
    background: request.background,
    output_format: request.outputFormat,
    output_compression: request.outputCompression,
    moderation: request.moderation,
    user: request.user
  }
}

/** The usage the upstream reported, or the table's count for what came back when it reported none. */
const usageOf = (raw: unknown, call: ImagesCall, images: number): ImageUsage => {
  if (!isRecord(raw) || typeof raw.output_tokens !== "number") {
    return {
      inputTokens: 0,
      inputTextTokens: 0,
      inputImageTokens: 0,
      outputTokens: images * imageTokensForHold(call.request.size, call.request.quality),
      estimated: true
    }
  }
  const details = asRecord(raw.input_tokens_details)
  return {
    inputTokens: asCount(raw.input_tokens),
    inputTextTokens: asCount(details.text_tokens),
    inputImageTokens: asCount(details.image_tokens),
    outputTokens: asCount(raw.output_tokens),
    estimated: false
  }
}

const replyOf = (body: unknown, call: ImagesCall, now: number): Result.Result<ImagesReply, PluginFailure> => {
  const response = asRecord(body)
  const images: Array<{ b64Json: string; revisedPrompt?: string }> = []
  for (const item of asArray(response.data)) {
    const b64 = asString(asRecord(item).b64_json)
    if (b64 === undefined) {
      return Result.fail(
        pluginFailure("unavailable", "the upstream answered with an image link instead of base64 data")
      )
    }
    const revised = asString(asRecord(item).revised_prompt)
    images.push(revised === undefined ? { b64Json: b64 } : { b64Json: b64, revisedPrompt: revised })
  }
  if (images.length === 0) return Result.fail(pluginFailure("unavailable", "the upstream answered with no image"))
  const { data: _data, usage: _usage, created, ...fields } = response
  return Result.succeed({
    created: typeof created === "number" ? created : Math.floor(now / 1000),
    images,
    usage: usageOf(response.usage, call, images.length),
    fields
  })
}

/** The prices this family bills by (the operator config may set no others). */
export const DEDICATED_IMAGE_PRICE_KEYS: PriceKeys = { allowed: ["input", "output"], required: ["output"] }

export const makeDedicatedImagePlugin = (client: UpstreamClient["Service"], fetcher: ImageFetcher): ImagesPlugin => {
  const send = (call: ImagesCall, path: string, body: Uint8Array | string, contentType: string) =>
    onUpstream(call.model, upstreamsFor(call.model, ["openai"]), "image", (upstream) =>
      client
        .request({
          upstream,
          method: "POST",
          path,
          headers: { "content-type": contentType },
          body,
          signal: call.signal
        })
        .pipe(
          Effect.flatMap((response) => response.body.json),
          // A refusal by the vendor's moderation is the client's to rephrase, never another upstream's to retry.
          Effect.mapError((error) => moderationRefusal(error) ?? error),
          Effect.flatMap((json) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fromResult(replyOf(json, call, now)))
          )
        )
    )

  const generate = (call: ImagesCall): Effect.Effect<ImagesReply, PluginFailure> =>
    send(call, OpenAiPaths.imagesGenerations, JSON.stringify(compact(optionFields(call))), "application/json")

  const edit = (call: ImagesCall): Effect.Effect<ImagesReply, PluginFailure> =>
    Effect.gen(function* () {
      const { request } = call
      if (request.images.length === 0)
        return yield* Effect.fail(
          pluginFailure("invalid_request", "image: at least one image is required", { param: "image" })
        )
      const images = yield* Effect.forEach(
        request.images,
        (input, index) => resolveInput(input, `image ${index + 1}`, fetcher, call.signal, EDIT_IMAGE_TYPES),
        { concurrency: 4 }
      )
      const mask =
        request.mask === undefined
          ? undefined
          : yield* resolveInput(request.mask, "mask", fetcher, call.signal, ["image/png"])
      const fields: Array<FormPart> = Object.entries(compact(optionFields(call))).map(([name, value]) => ({
        _tag: "Field",
        name,
        value: String(value)
      }))
      if (request.inputFidelity !== undefined) {
        fields.push({ _tag: "Field", name: "input_fidelity", value: request.inputFidelity })
      }
      const name = images.length === 1 ? "image" : "image[]"
      const files: Array<FormPart> = images.map((image) => ({
        _tag: "File",
        name,
        filename: image.filename,
        contentType: image.mimeType,
        data: image.data
      }))
      if (mask !== undefined) {
        files.push({ _tag: "File", name: "mask", filename: mask.filename, contentType: mask.mimeType, data: mask.data })
      }
      const form = encodeMultipart([...fields, ...files])
      return yield* send(call, OpenAiPaths.imagesEdits, form.body, form.contentType)
    })

  return {
    specificationVersion: "v1",
    id: DEDICATED_IMAGE_PLUGIN_ID,
    family: "dedicated-image",
    kind: "images",
    pricingKeys: DEDICATED_IMAGE_PRICE_KEYS,
    pricing: dedicatedImagePricing,
    generate,
    edit
  }
}
