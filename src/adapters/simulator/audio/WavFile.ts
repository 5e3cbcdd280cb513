/** Reading a RIFF/WAVE header: the format and the seconds its data chunk holds, without decoding samples. */

export interface WavInfo {
  readonly audioFormat: number
  readonly channels: number
  readonly sampleRate: number
  readonly bitsPerSample: number
  readonly seconds: number
}

export const isRiffWave = (bytes: Uint8Array): boolean =>
  bytes.length >= 12 &&
  Buffer.from(bytes.buffer, bytes.byteOffset, 4).toString("ascii") === "RIFF" &&
  Buffer.from(bytes.buffer, bytes.byteOffset + 8, 4).toString("ascii") === "WAVE"

/** The header of a WAV file, or undefined when its `fmt ` or `data` chunk is missing or inconsistent. */
export const readWav = (bytes: Uint8Array): WavInfo | undefined => {
  if (!isRiffWave(bytes)) return undefined
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let format: Omit<WavInfo, "seconds"> | undefined
  let byteRate = 0
  let dataBytes: number | undefined
  let offset = 12
  while (offset + 8 <= view.length) {
    const id = view.toString("ascii", offset, offset + 4)
    const size = view.readUInt32LE(offset + 4)
    const start = offset + 8
    if (id === "fmt ") {
      if (size < 16 || start + 16 > view.length) return undefined
      format = {
        audioFormat: view.readUInt16LE(start),
        channels: view.readUInt16LE(start + 2),
        sampleRate: view.readUInt32LE(start + 4),
        bitsPerSample: view.readUInt16LE(start + 14)
      }
      byteRate = view.readUInt32LE(start + 8)
    } else if (id === "data") {
      // A streamed WAV leaves the size at 0 or 0xFFFFFFFF; a truncated one claims more than it holds.
      const remaining = view.length - start
      dataBytes = size === 0 || size > remaining ? remaining : size
      if (format !== undefined) break
    }
    offset = start + size + (size % 2)
  }
  if (format === undefined || dataBytes === undefined) return undefined
  if (format.channels === 0 || format.sampleRate === 0) return undefined
  const rate = byteRate > 0 ? byteRate : (format.sampleRate * format.channels * format.bitsPerSample) / 8
  if (!(rate > 0)) return undefined
  return { ...format, seconds: dataBytes / rate }
}
