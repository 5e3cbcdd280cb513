/**
 * Traces over OTLP/HTTP (JSON) when an endpoint is configured: every `traced` step of the gateway (the pipeline,
 * the ledger, the upstream client) and the HTTP server's request spans, exported in batches. Effect 4 ships its own
 * OTLP exporter (`effect/observability`), so no OpenTelemetry SDK is needed; any OTLP collector (the OpenTelemetry
 * Collector, Jaeger, Tempo, Honeycomb) takes the same wire format.
 */
import { Duration, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"

export interface TracingOptions {
  /** The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); traces go to `<endpoint>/v1/traces`. */
  readonly endpoint: string
  readonly serviceName?: string | undefined
  readonly exportIntervalMs?: number | undefined
}

export const layer = (options: TracingOptions) =>
  OtlpTracer.layer({
    url: `${options.endpoint.replace(/\/+$/, "")}/v1/traces`,
    resource: { serviceName: options.serviceName ?? "tollgate" },
    exportInterval: Duration.millis(options.exportIntervalMs ?? 5_000)
  }).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))
