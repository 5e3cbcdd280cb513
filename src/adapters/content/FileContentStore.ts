/**
 * The content store on the local file system: one file per key under a root directory (by default
 * `<data dir>/content`). A write goes to a temporary name and is renamed into place, so a reader never sees a
 * partial file and a crash leaves only a `.part` file behind. Edge: node:fs streams are promise/stream based, so
 * they are wrapped here.
 */
import { Effect, Layer, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import { mkdir, open, rename, rm, stat } from "node:fs/promises"
import { dirname, join } from "node:path"
import { pipeline } from "node:stream/promises"
import { ContentStore, ContentStoreError, ContentTooLarge } from "../../app/ContentStore.ts"

/** Keys are our own ids (`videos/<task id>.mp4`); anything else is refused so a key can never leave the root. */
const KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_.-]+)*$/

const failure = (action: string, key: string) => (cause: unknown) =>
  new ContentStoreError({ message: `could not ${action} ${key}: ${(cause as Error)?.message ?? String(cause)}` })

class TooLarge extends Error {}

export const make = (root: string): ContentStore["Service"] => {
  const pathOf = (key: string) =>
    KEY.test(key) && !key.split("/").includes("..")
      ? Effect.succeed(join(root, key))
      : Effect.fail(new ContentStoreError({ message: `invalid content key '${key}'` }))

  const put = (key: string, body: AsyncIterable<Uint8Array>, maxBytes: number) =>
    Effect.flatMap(pathOf(key), (path) => {
      const temporary = `${path}.part-${randomUUID()}`
      let size = 0
      async function* counted() {
        for await (const chunk of body) {
          size += chunk.byteLength
          if (size > maxBytes) throw new TooLarge()
          yield chunk
        }
      }
      return Effect.tryPromise({
        try: async () => {
          await mkdir(dirname(path), { recursive: true })
          await pipeline(counted(), createWriteStream(temporary, { flags: "wx" }))
          await rename(temporary, path)
          return { size }
        },
        catch: (cause) =>
          cause instanceof TooLarge ? new ContentTooLarge({ limit: maxBytes }) : failure("store", key)(cause)
      }).pipe(Effect.tapError(() => Effect.promise(() => rm(temporary, { force: true }).catch(() => undefined))))
    })

  const statOf = (key: string) =>
    Effect.flatMap(pathOf(key), (path) =>
      Effect.tryPromise({
        try: () =>
          stat(path).then(
            (s) => ({ size: s.size }),
            (error: NodeJS.ErrnoException) => {
              if (error.code === "ENOENT") return undefined
              throw error
            }
          ),
        catch: failure("read", key)
      })
    )

  const read = (key: string, range?: { readonly start: number; readonly end: number }) =>
    Stream.unwrap(
      Effect.map(pathOf(key), (path) =>
        Stream.fromAsyncIterable(
          createReadStream(
            path,
            range === undefined ? {} : { start: range.start, end: range.end }
          ) as AsyncIterable<Uint8Array>,
          failure("read", key)
        )
      )
    )

  const head = (key: string, limit: number) =>
    Effect.flatMap(pathOf(key), (path) =>
      Effect.tryPromise({
        try: async () => {
          const handle = await open(path, "r")
          try {
            const buffer = new Uint8Array(limit)
            const { bytesRead } = await handle.read(buffer, 0, limit, 0)
            return buffer.subarray(0, bytesRead)
          } finally {
            await handle.close()
          }
        },
        catch: failure("read", key)
      })
    )

  const remove = (key: string) =>
    Effect.flatMap(pathOf(key), (path) =>
      Effect.tryPromise({ try: () => rm(path, { force: true }), catch: failure("delete", key) })
    )

  return ContentStore.of({ put, stat: statOf, read, head, remove })
}

export const layer = (root: string) => Layer.succeed(ContentStore, make(root))
