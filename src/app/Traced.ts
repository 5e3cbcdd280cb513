/**
 * Spans for the gateway's own steps (the chat pipeline, the ledger, the upstream client), paid for only while traces
 * are exported. `Effect.fn("name")` builds a span, captures a call-site stack and copies the fiber's context twice on
 * every call, tracer or not; on the request path that was a fifth of the gateway's CPU. Here a step is an
 * `Effect.fnUntraced` body with `traced("name")` as its pipeable: a span named `name` around each call while
 * `References.TracerEnabled` is on — the server turns it off when no OTLP endpoint is configured — and nothing
 * otherwise.
 *
 *   const request = Effect.fnUntraced(function* (input: Input) { ... }, traced("UpstreamClient.request"))
 */
import { Effect, References } from "effect"

export const traced =
  (name: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) => (fiber.getRef(References.TracerEnabled) ? Effect.withSpan(effect, name) : effect))
