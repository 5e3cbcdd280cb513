/**
 * The load generator, run as its own process (forked by the suite and pinned to its own core) so it never shares a
 * core with the server under test. It takes one job at a time over IPC and answers with raw figures:
 *
 * - `load`: autocannon, N keep-alive connections for S seconds (optionally at a fixed overall rate). Every
 *   connection gets its own API key (round-robin over `keys`) from its second request on; per-response latency is
 *   recorded with hrtime precision (autocannon's own histogram has 1 ms buckets), and with `ttfb` the time from
 *   writing a request to its first body byte.
 * - `sequential`: one connection, one request at a time (added latency, the figure peers publish).
 * - `streams`: N streamed requests held open at once; while all are open, a probe sends non-streamed requests one
 *   at a time on its own connection to see how responsive the server stays.
 */
import { createRequire } from "node:module"
import { Agent, Pool, request } from "undici"

export interface Request {
  readonly method: "POST" | "GET"
  readonly path: string
  readonly body: string
  readonly headers: Record<string, string>
}

export interface LoadJob {
  readonly kind: "load"
  readonly origin: string
  readonly request: Request
  /** Per-connection `authorization` values; empty → the request's own headers everywhere. */
  readonly keys: ReadonlyArray<string>
  readonly connections: number
  readonly seconds: number
  /** Requests per second over all connections; 0 = as fast as possible. */
  readonly rate: number
  readonly ttfb: boolean
  /** Also report figures per window of this many seconds (soak). */
  readonly windowSeconds?: number
}

export interface SequentialJob {
  readonly kind: "sequential"
  readonly origin: string
  readonly request: Request
  readonly count: number
  /** Also time each response's first body chunk (a stream's first event). */
  readonly firstByte?: boolean
}

export interface StreamsJob {
  readonly kind: "streams"
  readonly origin: string
  readonly request: Request
  readonly keys: ReadonlyArray<string>
  readonly count: number
  readonly probe: Request
  readonly maxProbes: number
}

export type Job = LoadJob | SequentialJob | StreamsJob

export interface Distribution {
  readonly p50: number
  readonly p99: number
  readonly max: number
}

export interface LoadResult {
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly latency: Distribution
  readonly ttfb?: Distribution
  readonly statuses: Record<string, number>
  readonly errors: number
  readonly timeouts: number
  readonly windows?: ReadonlyArray<{ readonly at: number; readonly rps: number } & Distribution>
}

export interface SequentialResult {
  readonly latency: Distribution
  readonly firstByte?: Distribution
  readonly statuses: Record<string, number>
  readonly errors: number
}

export interface StreamsResult {
  readonly opened: number
  readonly completed: number
  readonly openSeconds: number
  readonly statuses: Record<string, number>
  readonly errors: number
  readonly probe: Distribution & { readonly count: number; readonly failed: number }
  /** Wall-clock window (ms since epoch) during which every stream was open. */
  readonly windowStart: number
  readonly windowEnd: number
}

export const distribution = (values: ArrayLike<number>, length = values.length): Distribution => {
  const sorted = Float64Array.from({ length }, (_, i) => values[i]).sort()
  if (length === 0) return { p50: Number.NaN, p99: Number.NaN, max: Number.NaN }
  const at = (p: number) => sorted[Math.min(length - 1, Math.floor(p * length))]
  return { p50: at(0.5), p99: at(0.99), max: sorted[length - 1] }
}

interface AutocannonClient {
  on(event: "request" | "body", listener: () => void): void
  setRequests(requests: ReadonlyArray<{ headers: Record<string, string> }>): void
}
interface AutocannonInstance {
  on(event: "response", listener: (client: AutocannonClient, status: number, bytes: number, ms: number) => void): void
  on(event: "reqError", listener: () => void): void
  on(event: "done", listener: (result: { errors: number; timeouts: number }) => void): void
}
type Autocannon = (options: Record<string, unknown>) => AutocannonInstance
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon

const now = () => Number(process.hrtime.bigint()) / 1e6

const runLoad = (job: LoadJob): Promise<LoadResult> =>
  new Promise((resolve) => {
    const capacity = 1 << 20
    let latencies = new Float64Array(capacity)
    let times = new Float64Array(capacity)
    let count = 0
    const ttfbs: Array<number> = []
    const statuses: Record<string, number> = {}
    const seen = new Set<AutocannonClient>()
    const started = now()
    const instance = autocannon({
      url: job.origin + job.request.path,
      method: job.request.method,
      body: job.request.body,
      headers: job.request.headers,
      connections: job.connections,
      duration: job.seconds,
      overallRate: job.rate > 0 ? job.rate : undefined,
      pipelining: 1,
      timeout: 30
    })
    instance.on("response", (client, status, _bytes, ms) => {
      if (count === latencies.length) {
        const grow = (old: Float64Array) => {
          const next = new Float64Array(old.length * 2)
          next.set(old)
          return next
        }
        latencies = grow(latencies)
        times = grow(times)
      }
      latencies[count] = ms
      times[count] = now() - started
      count++
      statuses[status] = (statuses[status] ?? 0) + 1
      if (seen.has(client)) return
      seen.add(client)
      // autocannon shares one request object between its connections; a fresh one per connection lets each carry
      // its own key (the connection's first request went out with the default key).
      if (job.keys.length > 0) {
        const key = job.keys[(seen.size - 1) % job.keys.length]
        client.setRequests([{ headers: { ...job.request.headers, authorization: key } }])
      }
      if (job.ttfb) {
        let sentAt = 0
        let waiting = false
        client.on("request", () => {
          sentAt = now()
          waiting = true
        })
        client.on("body", () => {
          if (!waiting) return
          waiting = false
          ttfbs.push(now() - sentAt)
        })
      }
    })
    instance.on("done", (result) => {
      const seconds = (now() - started) / 1000
      const windows: Array<{ at: number; rps: number } & Distribution> = []
      if (job.windowSeconds !== undefined) {
        const width = job.windowSeconds * 1000
        let from = 0
        for (let edge = width; from < count; edge += width) {
          let to = from
          while (to < count && times[to] < edge) to++
          if (to > from) {
            windows.push({
              at: edge / 1000,
              rps: (to - from) / job.windowSeconds,
              ...distribution(latencies.subarray(from, to))
            })
          }
          from = to
        }
      }
      resolve({
        requests: count,
        seconds,
        rps: count / seconds,
        latency: distribution(latencies, count),
        ...(job.ttfb ? { ttfb: distribution(ttfbs) } : {}),
        statuses,
        errors: result.errors,
        timeouts: result.timeouts,
        ...(job.windowSeconds !== undefined ? { windows } : {})
      })
    })
  })

const runSequential = async (job: SequentialJob): Promise<SequentialResult> => {
  const dispatcher = new Agent({ connections: 1, pipelining: 1 })
  const samples = new Float64Array(job.count)
  const firstBytes = new Float64Array(job.count)
  const statuses: Record<string, number> = {}
  let errors = 0
  for (let i = 0; i < job.count; i++) {
    const started = now()
    try {
      const response = await request(job.origin + job.request.path, {
        method: job.request.method,
        body: job.request.body,
        headers: job.request.headers,
        dispatcher
      })
      if (job.firstByte === true) {
        for await (const _chunk of response.body) if (firstBytes[i] === 0) firstBytes[i] = now() - started
      } else await response.body.arrayBuffer()
      statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1
    } catch {
      errors++
    }
    samples[i] = now() - started
  }
  await dispatcher.close()
  return {
    latency: distribution(samples),
    ...(job.firstByte === true ? { firstByte: distribution(firstBytes) } : {}),
    statuses,
    errors
  }
}

const runStreams = async (job: StreamsJob): Promise<StreamsResult> => {
  const pool = new Pool(job.origin, { connections: job.count, pipelining: 1 })
  const statuses: Record<string, number> = {}
  let opened = 0
  let completed = 0
  let errors = 0
  let allOpen: () => void = () => {}
  const open = new Promise<void>((resolve) => {
    allOpen = resolve
  })
  const started = now()
  const streams = Array.from({ length: job.count }, (_, i) =>
    pool
      .request({
        method: job.request.method,
        path: job.request.path,
        body: job.request.body,
        headers: { ...job.request.headers, authorization: job.keys[i % job.keys.length] },
        headersTimeout: 120_000,
        bodyTimeout: 120_000
      })
      .then(async (response) => {
        statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1
        let first = true
        for await (const _chunk of response.body) {
          if (first) {
            first = false
            if (++opened === job.count) allOpen()
          }
        }
        completed++
      })
      .catch(() => {
        errors++
        if (opened + errors === job.count) allOpen()
      })
  )
  await Promise.race([open, new Promise((resolve) => setTimeout(resolve, 60_000))])
  const openSeconds = (now() - started) / 1000
  const windowStart = Date.now()
  const probeDispatcher = new Agent({ connections: 1 })
  const probes: Array<number> = []
  let failed = 0
  while (completed === 0 && probes.length < job.maxProbes) {
    const at = now()
    try {
      const response = await request(job.origin + job.probe.path, {
        method: job.probe.method,
        body: job.probe.body,
        headers: job.probe.headers,
        dispatcher: probeDispatcher
      })
      await response.body.arrayBuffer()
      if (response.statusCode !== 200) failed++
    } catch {
      failed++
    }
    probes.push(now() - at)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const windowEnd = Date.now()
  await Promise.all(streams)
  await probeDispatcher.close()
  await pool.close()
  return {
    opened,
    completed,
    openSeconds,
    statuses,
    errors,
    probe: { ...distribution(probes), count: probes.length, failed },
    windowStart,
    windowEnd
  }
}

const run = (job: Job): Promise<unknown> => {
  switch (job.kind) {
    case "load":
      return runLoad(job)
    case "sequential":
      return runSequential(job)
    case "streams":
      return runStreams(job)
  }
}

if (process.send !== undefined) {
  process.on("message", (job: Job) => {
    run(job).then(
      (result) => process.send?.({ ok: true, result }),
      (error: unknown) => process.send?.({ ok: false, error: String(error) })
    )
  })
  process.send({ ready: true })
}
