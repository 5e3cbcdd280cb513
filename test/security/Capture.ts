/**
 * Captures everything the test process writes while a test runs: every console method (Effect's default logger
 * writes through `console`) and raw `process.stdout`/`process.stderr` writes, each formatted in full depth.
 */
import { formatWithOptions } from "node:util"

export interface Capture {
  readonly lines: () => ReadonlyArray<string>
  readonly stop: () => void
}

const consoleMethods = ["log", "info", "warn", "error", "debug", "trace"] as const

export const captureOutput = (): Capture => {
  const lines: Array<string> = []
  const target = globalThis.console as unknown as Record<string, (...args: ReadonlyArray<unknown>) => void>
  const savedConsole = consoleMethods.map((name) => [name, target[name]] as const)
  for (const [name, original] of savedConsole) {
    target[name] = (...args: ReadonlyArray<unknown>) => {
      lines.push(formatWithOptions({ depth: Number.POSITIVE_INFINITY, colors: false }, ...args))
      original.apply(globalThis.console, args as Array<unknown>)
    }
  }
  const streams = [process.stdout, process.stderr] as const
  const savedWrites = streams.map((stream) => stream.write)
  streams.forEach((stream, index) => {
    const original = savedWrites[index]
    stream.write = ((chunk: unknown, ...rest: Array<unknown>) => {
      lines.push(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8"))
      return (original as (...args: Array<unknown>) => boolean).call(stream, chunk, ...rest)
    }) as typeof stream.write
  })
  return {
    lines: () => lines,
    stop: () => {
      for (const [name, original] of savedConsole) target[name] = original
      streams.forEach((stream, index) => {
        stream.write = savedWrites[index]
      })
    }
  }
}
