/** The Redis the shared-state suites use: REDIS_URL, else the local 127.0.0.1:6379, and whether it answers. */
import { Redis } from "ioredis"

export const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

/** Whether a Redis answers PING at `redisUrl` (suites that need one skip, saying so, when it does not). */
export const redisAnswers = async (): Promise<boolean> => {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
  client.on("error", () => undefined)
  try {
    await client.connect()
    return (await client.ping()) === "PONG"
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}
