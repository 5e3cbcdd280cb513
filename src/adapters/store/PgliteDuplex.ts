/**
 * In-process transport that lets `@effect/sql-pg`'s wire-protocol client talk to an embedded PGlite database, so the
 * embedded store and a Postgres server share one client, one SQL dialect and one set of type codecs.
 *
 * PGlite is a single backend session, so every "connection" shares it: a session lock is taken for a whole batch of
 * protocol messages and kept while the backend is inside a transaction block, so no connection ever interleaves
 * extended-protocol messages with another or runs inside someone else's transaction. (pglite-socket's multiplexer
 * queues messages one by one and returns other connections' rows under concurrency, as measured here.)
 *
 * This module is an edge around a Promise-based library, so it uses async code internally.
 */
import type { PGlite } from "@electric-sql/pglite"
import { Duplex } from "node:stream"

class SessionLock {
  private owner: object | undefined
  private readonly waiters: Array<() => void> = []
  async acquire(who: object): Promise<void> {
    if (this.owner === who) return
    while (this.owner !== undefined) await new Promise<void>((resolve) => this.waiters.push(resolve))
    this.owner = who
  }
  holds(who: object): boolean {
    return this.owner === who
  }
  release(who: object): void {
    if (this.owner !== who) return
    this.owner = undefined
    this.waiters.shift()?.()
  }
}

const locks = new WeakMap<PGlite, SessionLock>()
const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102
const SYNC = 0x53
const QUERY = 0x51
const TERMINATE = 0x58

export const pgliteStream = (db: PGlite) => (): Duplex => {
  let lock = locks.get(db)
  if (lock === undefined) {
    lock = new SessionLock()
    locks.set(db, lock)
  }
  const session = lock
  const me = {}
  let pending: Buffer = Buffer.alloc(0)
  let startupSeen = false
  let chain: Promise<void> = Promise.resolve()

  const exec = (message: Uint8Array) =>
    db.runExclusive(() =>
      db.execProtocolRawStream(message, {
        onRawData: (data) => {
          if (data.length > 0) duplex.push(Buffer.from(data))
        }
      })
    )

  const run = async (messages: Array<readonly [Buffer, boolean]>) => {
    await session.acquire(me)
    for (const [message, startup] of messages) {
      await exec(message)
      // Release only at a protocol sync point and only outside a transaction block.
      const syncPoint = startup || message[0] === SYNC || message[0] === QUERY
      if (syncPoint && !db.isInTransaction()) session.release(me)
    }
  }

  const duplex: Duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk
      const messages: Array<readonly [Buffer, boolean]> = []
      for (;;) {
        if (!startupSeen) {
          if (pending.length < 8) break
          const length = pending.readInt32BE(0)
          const code = pending.readInt32BE(4)
          if (pending.length < length) break
          const message = pending.subarray(0, length)
          pending = pending.subarray(length)
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
            duplex.push(Buffer.from("N"))
            continue
          }
          if (code === CANCEL_REQUEST) {
            duplex.push(null) // a single backend cannot cancel a running query
            continue
          }
          messages.push([message, true])
          startupSeen = true
          continue
        }
        if (pending.length < 5) break
        const length = 1 + pending.readInt32BE(1)
        if (pending.length < length) break
        const message = pending.subarray(0, length)
        pending = pending.subarray(length)
        if (message[0] === TERMINATE) {
          chain = chain.then(() => {
            duplex.push(null)
          })
          continue
        }
        messages.push([message, false])
      }
      if (messages.length > 0) {
        chain = chain
          .then(() => run(messages))
          .catch((error: unknown) => {
            duplex.destroy(error instanceof Error ? error : new Error(String(error)))
          })
      }
      callback()
    },
    final(callback) {
      chain.then(() => callback())
    },
    destroy(error, callback) {
      // A dropped connection (pool retirement, interruption) rolls back its abandoned transaction and frees the lock.
      chain
        .then(async () => {
          if (session.holds(me) && !db.closed && db.isInTransaction()) {
            await db.exec("ROLLBACK").catch(() => undefined)
          }
          session.release(me)
        })
        .finally(() => callback(error))
    }
  })
  return duplex
}
