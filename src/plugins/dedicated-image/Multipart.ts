/**
 * A `multipart/form-data` body, written directly: text fields and files in order, one random boundary. The images
 * API's edits endpoint takes its files this way.
 */
import { Buffer } from "node:buffer"
import { randomUUID } from "node:crypto"

export type FormPart =
  | { readonly _tag: "Field"; readonly name: string; readonly value: string }
  | {
      readonly _tag: "File"
      readonly name: string
      readonly filename: string
      readonly contentType: string
      readonly data: Uint8Array
    }

const quoted = (value: string): string => value.replaceAll('"', "%22").replaceAll("\r", "%0D").replaceAll("\n", "%0A")

export const encodeMultipart = (
  parts: ReadonlyArray<FormPart>
): { readonly body: Uint8Array; readonly contentType: string } => {
  const boundary = `----tollgate-${randomUUID().replaceAll("-", "")}`
  const chunks: Array<Uint8Array> = []
  for (const part of parts) {
    const disposition =
      part._tag === "Field"
        ? `Content-Disposition: form-data; name="${quoted(part.name)}"\r\n\r\n`
        : `Content-Disposition: form-data; name="${quoted(part.name)}"; filename="${quoted(part.filename)}"\r\nContent-Type: ${part.contentType}\r\n\r\n`
    chunks.push(Buffer.from(`--${boundary}\r\n${disposition}`))
    chunks.push(part._tag === "Field" ? Buffer.from(part.value) : part.data)
    chunks.push(Buffer.from("\r\n"))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` }
}
