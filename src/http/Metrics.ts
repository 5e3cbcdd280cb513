/**
 * Prometheus metrics (`GET /metrics`, prom-client's text format). Per request: counts and latency by route pattern,
 * method, model and status, split into the upstream's share and the gateway's own overhead. At scrape time, from the
 * store (so every instance on one database agrees): ledger events appended, holds outstanding, video tasks and batches
 * by state. This instance's batch lines by endpoint and outcome, and what they captured (BatchMetrics.ts).
 * Per deployment, from routing (DeploymentMetrics.ts): state, in flight, attempts by outcome, error rate, latency.
 * From this instance's ledger writers: batches, commands and batch retries (the group commit's batch size and its
 * conflict rate). Plus the process's CPU, memory and event-loop lag. Open unless `TOLLGATE_METRICS_TOKEN` is set,
 * then Bearer.
 *
 * A streamed response is measured to its first byte (the headers): the whole stream's length is the client's pace.
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash, timingSafeEqual } from "node:crypto"
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client"
import { Batches } from "../app/batch/Batches.ts"
import { Ledger } from "../app/Ledger.ts"
import { OperationalStats } from "../app/OperationalStats.ts"
import type { RequestTelemetry } from "../app/RequestTelemetry.ts"
import { PluginRegistry } from "../app/PluginRegistry.ts"
import { apiError } from "./ApiError.ts"
import { Deployments } from "../app/routing/Deployments.ts"
import { registerBatchMetrics } from "./BatchMetrics.ts"
import { registerDeploymentMetrics } from "./DeploymentMetrics.ts"
import { oncePerScrape } from "./ScrapeOnce.ts"

export interface RequestObservation {
  readonly route: string
  readonly method: string
  readonly status: number
  readonly seconds: number
  readonly telemetry: RequestTelemetry
}

export interface MetricsSink {
  readonly observe: (observation: RequestObservation) => void
}

/** Where `respond` reports each request; a no-op until the server's layer provides the registry. */
export const RequestMetrics = Context.Reference<MetricsSink>("tollgate/http/RequestMetrics", {
  defaultValue: () => ({ observe: () => undefined })
})

// Buckets from 1 ms to 2 min: a gateway's own overhead sits at the low end, video and long generations at the top.
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

export class PrometheusRegistry extends Context.Service<PrometheusRegistry, Registry>()(
  "tollgate/http/PrometheusRegistry"
) {
  /** A registry of its own per gateway (tests run several in one process), fed by `respond` and the store. */
  static readonly layer = Layer.effectContext(
    Effect.gen(function* () {
      const plugins = yield* PluginRegistry
      const registry = new Registry()
      // The event-loop lag histogram samples with a timer: once a second, not prom-client's every 10 ms. An idle
      // process's wake-ups are its idle CPU: at 100 ms the timer alone was 10 of its 13 wake-ups a second and idle CPU
      // 2.6–2.8 ms/s, at 1 s 1.7–1.9 ms/s (bench/README.md, "Idle"). A stall shorter than a second can fall between
      // two samples; `tollgate_nodejs_eventloop_lag_seconds` is still measured at each scrape.
      collectDefaultMetrics({ register: registry, prefix: "tollgate_", eventLoopMonitoringPrecision: 1000 })
      const sink = requestSink(registry, plugins)
      const batchCounts = registerStoreGauges(registry, yield* OperationalStats)
      registerWriterMetrics(registry, yield* Ledger)
      registerBatchMetrics(registry, yield* Batches, batchCounts)
      registerDeploymentMetrics(registry, yield* Deployments, (model) => plugins.resolve(model)?.kind !== "videos")
      return Context.make(PrometheusRegistry, registry).pipe(Context.add(RequestMetrics, sink))
    })
  )
}

/** The request metrics `respond` feeds: counts and durations by route, method, model and status. */
const requestSink = (registry: Registry, plugins: PluginRegistry["Service"]): MetricsSink => {
  const labelNames = ["route", "method", "model", "status"] as const
  const requests = new Counter({
    name: "tollgate_http_requests_total",
    help: "Requests answered, by route pattern, method, model and status",
    labelNames,
    registers: [registry]
  })
  const duration = new Histogram({
    name: "tollgate_http_request_duration_seconds",
    help: "Time to the response's first byte, by route pattern, method, model and status",
    labelNames,
    buckets: BUCKETS,
    registers: [registry]
  })
  const upstream = new Histogram({
    name: "tollgate_upstream_duration_seconds",
    help: "Time spent waiting on upstreams within a request, by route pattern and model",
    labelNames: ["route", "model"],
    buckets: BUCKETS,
    registers: [registry]
  })
  const overhead = new Histogram({
    name: "tollgate_gateway_overhead_seconds",
    help: "The gateway's own share of a request's time (the whole minus the upstream's), by route pattern",
    labelNames: ["route"],
    buckets: BUCKETS,
    registers: [registry]
  })
  return {
    observe: ({ route, method, status, seconds, telemetry }) => {
      // A model the catalog does not have is one label, `unknown`: a client must not grow the label set.
      const model =
        telemetry.model === undefined
          ? ""
          : plugins.resolve(telemetry.model) === undefined
            ? "unknown"
            : telemetry.model
      const labels = { route, method, model, status: String(status) }
      requests.inc(labels)
      duration.observe(labels, seconds)
      if (telemetry.upstreamSeconds > 0) upstream.observe({ route, model }, telemetry.upstreamSeconds)
      overhead.observe({ route }, Math.max(0, seconds - telemetry.upstreamSeconds))
    }
  }
}

/** The store's figures (events, outstanding holds, video tasks); the batches' counts through the reader returned. */
const registerStoreGauges = (
  registry: Registry,
  stats: OperationalStats["Service"]
): (() => Promise<Readonly<Record<string, number>>>) => {
  // Edge: prom-client is promise-based; its gauges' `collect` callbacks are async and run the store read here.
  // Scrape-time figures, read once per scrape by whichever gauge is collected first (prom-client collects them
  // concurrently). A failed read keeps the previous figures: a scrape must not fail with the store.
  let last = {
    events: 0,
    holds: 0,
    held: 0,
    videos: {} as Readonly<Record<string, number>>,
    batches: {} as Readonly<Record<string, number>>
  }
  const refresh = oncePerScrape(
    stats.snapshot.pipe(
      Effect.tap((snapshot) =>
        Effect.sync(() => {
          last = {
            events: Number(snapshot.eventsAppended),
            holds: snapshot.holdsOutstanding.count,
            held: Number(snapshot.holdsOutstanding.amount),
            videos: snapshot.videoTasks,
            batches: snapshot.batches
          }
        })
      ),
      Effect.ignore
    )
  )
  const scraped = (name: string, help: string, read: (figures: typeof last) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        await refresh()
        this.set(read(last))
      }
    })
  scraped(
    "tollgate_ledger_events_appended",
    "Events appended to the ledger (its highest global position)",
    (f) => f.events
  )
  scraped("tollgate_holds_outstanding", "Holds placed and not yet resolved", (f) => f.holds)
  scraped(
    "tollgate_holds_outstanding_micro_usd",
    "Micro-dollars reserved by unresolved holds (an integer: money is never a float)",
    (f) => f.held
  )
  new Gauge({
    name: "tollgate_video_tasks",
    help: "Video tasks by status",
    labelNames: ["status"],
    registers: [registry],
    async collect() {
      await refresh()
      this.reset()
      for (const status of ["queued", "in_progress", "completed", "failed"]) {
        this.set({ status }, last.videos[status] ?? 0)
      }
    }
  })
  return () => refresh().then(() => last.batches)
}

/** This instance's ledger writers and live holds (in memory: what this process committed since it started). */
const registerWriterMetrics = (registry: Registry, ledger: Ledger["Service"]): void => {
  const writer = (name: string, help: string, read: (s: ReturnType<typeof ledger.writerStats>) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset()
        this.inc(read(ledger.writerStats()))
      }
    })
  writer(
    "tollgate_ledger_batches_total",
    "Ledger batches committed by this instance (one transaction each)",
    (s) => s.batches
  )
  writer("tollgate_ledger_commands_total", "Ledger commands committed by this instance", (s) => s.commands)
  writer(
    "tollgate_ledger_batch_retries_total",
    "Ledger batches decided again after colliding with another writer (heads locked) or another instance",
    (s) => s.lockedRetries + s.conflictRetries
  )
  writer(
    "tollgate_ledger_batch_isolations_total",
    "Ledger batches the database refused that were split so that only the refused commands failed",
    (s) => s.isolations
  )
  new Gauge({
    name: "tollgate_holds_live",
    help: "Holds this instance's requests are using right now (their leases are renewed)",
    registers: [registry],
    collect() {
      this.set(ledger.liveStats().liveHolds)
    }
  })
  new Gauge({
    name: "tollgate_settlements_deferred",
    help: "Settlements and releases this instance decided and is retrying until the database takes them",
    registers: [registry],
    collect() {
      this.set(ledger.liveStats().pendingResolutions)
    }
  })
}

/** The scrape token: unset → `/metrics` is open. */
export class MetricsToken extends Context.Service<MetricsToken, Option.Option<Redacted.Redacted<string>>>()(
  "tollgate/http/MetricsToken"
) {}

const digest = (text: string) => createHash("sha256").update(text).digest()

/** The `/metrics` handler (not wrapped by `respond`: a scrape is not an API request and is not itself counted). */
export const scrape = Effect.gen(function* () {
  const token = yield* MetricsToken
  if (Option.isSome(token)) {
    const request = yield* HttpServerRequest.HttpServerRequest
    const given = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1] ?? ""
    // Digests have equal lengths, so the comparison is constant-time whatever was sent.
    if (!timingSafeEqual(digest(given), digest(Redacted.value(token.value)))) {
      const error = apiError(401, "a valid metrics token is required: Authorization: Bearer <TOLLGATE_METRICS_TOKEN>")
      return HttpServerResponse.jsonUnsafe(
        { error: { message: error.message, type: "invalid_request_error", code: "invalid_metrics_token" } },
        { status: 401, headers: { "www-authenticate": "Bearer" } }
      )
    }
  }
  const registry = yield* PrometheusRegistry
  const text = yield* Effect.promise(() => registry.metrics())
  return HttpServerResponse.text(text, { contentType: registry.contentType })
})
