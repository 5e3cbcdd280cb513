/** The images an edit request brings: multipart files or JSON links (data URLs), typed by their bytes. */
import { MultipartParser } from "effect/http"
import { invalid } from "../OpenAIReplies.ts"
import { arrayField, field, type JsonRecord, stringField } from "../Json.ts"
import { header, type SimReply, type SimRequest } from "../SimResponse.ts"
import { isRecord } from "../Json.ts"
import { type ImageSize, MAX_EDGE, sniffImageType } from "./ImageFiles.ts"
import { usesGptImage1Table } from "./ImageTokens.ts"

export const autoEditSize = (model: string, input: ImageSize): ImageSize => {
  if (usesGptImage1Table(model)) {
    if (input.width === input.height) return { width: 1024, height: 1024 }
    return input.width > input.height ? { width: 1536, height: 1024 } : { width: 1024, height: 1536 }
  }
  const scale = Math.min(1, MAX_EDGE / Math.max(input.width, input.height))
  return {
    width: Math.max(1, Math.round(input.width * scale)),
    height: Math.max(1, Math.round(input.height * scale))
  }
}

const typed = (bytes: Uint8Array, declared: string | undefined): InputImage => ({
  bytes,
  mime: sniffImageType(bytes) ?? (declared === undefined || declared === "" ? "application/octet-stream" : declared)
})

const DATA_URL = /^data:([^;,]*)(;[^,]*)?,/

const fromImageUrl = (reference: unknown, param: string): InputImage | SimReply => {
  if (stringField(reference, "file_id") !== undefined) {
    return invalid("The simulator does not support file_id; send image_url with a data URL.", param, "invalid_value")
  }
  const url = stringField(reference, "image_url")
  if (url === undefined) return invalid(`Missing required parameter: '${param}.image_url'.`, param)
  const match = DATA_URL.exec(url)
  if (match === null || !(match[2] ?? "").includes("base64")) {
    return invalid("The simulator accepts only base64 data URLs in image_url.", param, "invalid_image_url")
  }
  return typed(Buffer.from(url.slice(match[0].length), "base64"), match[1])
}

export const readJsonEdit = (body: JsonRecord): ImagesRequest | SimReply => {
  const images: Array<InputImage> = []
  for (const [index, reference] of (arrayField(body, "images") ?? []).entries()) {
    const image = fromImageUrl(reference, `images[${index}]`)
    if (isReply(image)) return image
    images.push(image)
  }
  const maskRef = field(body, "mask")
  const mask = maskRef === undefined || maskRef === null ? undefined : fromImageUrl(maskRef, "mask")
  if (mask !== undefined && isReply(mask)) return mask
  return { params: body, images, mask }
}

export const readMultipart = (request: RawSimRequest): ImagesRequest | SimReply => {
  const params: Record<string, string> = {}
  const images: Array<InputImage> = []
  let mask: InputImage | undefined
  let failure: string | undefined
  const parser = MultipartParser.make({
    headers: { "content-type": header(request, "content-type") ?? "" },
    onField: (info, value) => {
      params[info.name] = MultipartParser.decodeField(info, value)
    },
    onFile: (info) => {
      const chunks: Array<Uint8Array> = []
      return (chunk) => {
        if (chunk !== null) {
          chunks.push(chunk)
          return
        }
        const file = typed(Buffer.concat(chunks), info.contentType)
        if (info.name === "image" || info.name === "image[]") images.push(file)
        else if (info.name === "mask") mask = file
      }
    },
    onError: (error) => {
      failure ??= error._tag
    },
    onDone: () => {}
  })
  parser.write(request.raw)
  parser.end()
  if (failure !== undefined) return invalid(`Could not parse the multipart form (${failure}).`)
  return { params, images, mask }
}

/** A request with its raw body bytes, which multipart needs (the server also parses JSON bodies for other routes). */
export interface RawSimRequest extends SimRequest {
  readonly raw: Uint8Array
}

export interface InputImage {
  readonly bytes: Uint8Array
  readonly mime: string
}

export interface ImagesRequest {
  readonly params: JsonRecord
  readonly images: ReadonlyArray<InputImage>
  readonly mask: InputImage | undefined
}

export const isReply = (value: unknown): value is SimReply =>
  isRecord(value) && (value._tag === "Json" || value._tag === "Sse")
