/**
 * The guarded fetch's low-level pieces: redirect statuses, DNS lookups pinned to the vetted addresses, error codes and
 * body reads capped at a size.
 */
import { discard } from "../upstream/ResponseBody.ts"
import { lookup as systemLookup } from "node:dns/promises"
import type { LookupFunction } from "node:net"
import type { Dispatcher } from "undici"
import type { ResolvedAddress, Resolver } from "./GuardedFetcher.ts"

export const DEFAULT_MAX_REDIRECTS = 5
export const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
export const USER_AGENT = "Tollgate-Fetch/0.1"

export const defaultResolver: Resolver = (hostname) => systemLookup(hostname, { all: true, verbatim: true })

export type Step<A> =
  | { readonly _tag: "Redirect"; readonly location: string }
  | { readonly _tag: "Done"; readonly value: A }

export const firstHeader = (headers: Dispatcher.ResponseData["headers"], name: string): string | undefined => {
  const value = headers[name]
  return typeof value === "string" ? value : value?.[0]
}

export const mediaType = (header: string | undefined): string => (header ?? "").split(";")[0]!.trim().toLowerCase()

export const isIpLiteral = (host: string): boolean =>
  /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || (host.includes(":") && !host.includes("/"))

/** A `lookup` that answers every connect with the vetted addresses and never asks DNS again. */
export const pinnedLookup =
  (addresses: ReadonlyArray<ResolvedAddress>): LookupFunction =>
  (_hostname, options, callback) => {
    if (options.all === true) {
      callback(
        null,
        addresses.map(({ address, family }) => ({ address, family }))
      )
      return
    }
    callback(null, addresses[0]!.address, addresses[0]!.family)
  }

export const errorCode = (cause: unknown): string => {
  if (typeof cause !== "object" || cause === null) return ""
  const code = (cause as { readonly code?: unknown }).code
  if (typeof code === "string") return code
  const errors = (cause as { readonly errors?: unknown }).errors
  return Array.isArray(errors) && errors.length > 0 ? errorCode(errors[0]) : ""
}

/** Reads a body up to `maxBytes`; `undefined` (and the body destroyed) once it grows past that. */
export const readCapped = (
  body: Dispatcher.ResponseData["body"],
  maxBytes: number,
  signal: AbortSignal
): Promise<Uint8Array | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const abort = () => {
      discard(body)
      reject(signal.reason)
    }
    signal.addEventListener("abort", abort, { once: true })
    body.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        signal.removeEventListener("abort", abort)
        discard(body)
        resolve(undefined)
        return
      }
      chunks.push(chunk)
    })
    body.on("end", () => {
      signal.removeEventListener("abort", abort)
      resolve(Buffer.concat(chunks))
    })
    body.on("error", (error) => {
      signal.removeEventListener("abort", abort)
      reject(error)
    })
  })
