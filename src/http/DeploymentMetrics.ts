/**
 * Per-deployment Prometheus figures, read from routing at scrape time: state (one series per state, 1 for the
 * current one), requests in flight, attempts by outcome, error rate and latency to the first byte. Labels are the
 * operator's own names (model, upstream, upstream model), so their number is bounded by the config. Video models,
 * which routing does not serve, are left out.
 */
import { Effect } from "effect"
import { Counter, Gauge, type Registry } from "prom-client"
import type { Deployments, UpstreamStatus } from "../app/routing/Deployments.ts"
import { routedOnly } from "../app/routing/DeploymentStatus.ts"
import { oncePerScrape } from "./ScrapeOnce.ts"

const STATES = ["healthy", "cooling", "open", "half_open", "disabled"] as const
const OUTCOMES = ["success", "rate_limited", "failed", "auth", "rejected", "cancelled"] as const

export const registerDeploymentMetrics = (
  registry: Registry,
  deployments: Deployments["Service"],
  isRouted: (model: string) => boolean
): void => {
  let last: ReadonlyArray<UpstreamStatus> = []
  const refresh = oncePerScrape(
    deployments.status.pipe(
      Effect.tap((status) =>
        Effect.sync(() => {
          last = routedOnly(status, isRouted)
        })
      ),
      Effect.asVoid
    )
  )
  const each = function* () {
    for (const upstream of last) {
      for (const deployment of upstream.deployments) {
        yield {
          labels: { model: deployment.model, upstream: upstream.name, upstream_model: deployment.upstreamModel },
          deployment
        }
      }
    }
  }
  const labelNames = ["model", "upstream", "upstream_model"] as const
  new Gauge({
    name: "tollgate_deployment_state",
    help: "Each deployment's routing state: 1 on the current one (healthy, cooling, open, half_open, disabled)",
    labelNames: [...labelNames, "state"],
    registers: [registry],
    async collect() {
      await refresh()
      this.reset()
      for (const { labels, deployment } of each()) {
        for (const state of STATES) this.set({ ...labels, state }, deployment.state === state ? 1 : 0)
      }
    }
  })
  new Gauge({
    name: "tollgate_deployment_in_flight",
    help: "Requests this instance has in flight on each deployment",
    labelNames,
    registers: [registry],
    async collect() {
      await refresh()
      this.reset()
      for (const { labels, deployment } of each()) this.set(labels, deployment.inFlight)
    }
  })
  new Counter({
    name: "tollgate_deployment_attempts_total",
    help: "Attempts this instance sent to each deployment, by outcome",
    labelNames: [...labelNames, "outcome"],
    registers: [registry],
    async collect() {
      await refresh()
      this.reset()
      for (const { labels, deployment } of each()) {
        for (const outcome of OUTCOMES) this.inc({ ...labels, outcome }, deployment.requests[outcome])
      }
    }
  })
  new Gauge({
    name: "tollgate_deployment_error_rate",
    help: "Rate limits, failures and refused credentials among each deployment's last 200 outcomes (0 to 1)",
    labelNames,
    registers: [registry],
    async collect() {
      await refresh()
      this.reset()
      for (const { labels, deployment } of each()) this.set(labels, deployment.errorRate)
    }
  })
  new Gauge({
    name: "tollgate_deployment_latency_seconds",
    help: "Time to the first byte over each deployment's last 200 answers, by quantile",
    labelNames: [...labelNames, "quantile"],
    registers: [registry],
    async collect() {
      await refresh()
      this.reset()
      for (const { labels, deployment } of each()) {
        if (deployment.latencyMs.p50 !== null) this.set({ ...labels, quantile: "0.5" }, deployment.latencyMs.p50 / 1000)
        if (deployment.latencyMs.p99 !== null)
          this.set({ ...labels, quantile: "0.99" }, deployment.latencyMs.p99 / 1000)
      }
    }
  })
}
