/**
 * `POST /admin/replay[?mode=apply]`: replays every event into a scratch schema and compares (verify) or swaps the
 * rebuilt rows in (apply). A long history takes minutes, so a client that sends `Accept: application/x-ndjson` gets
 * one JSON line per page of events (`{"progress":{"events","total","elapsedMs"}}`) and then `{"report":…}` — or
 * `{"error":{…}}` when the store fails after the 200 went out. Any other client gets the report as one JSON body.
 */
import { Effect, Queue, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { Replay, type ReplayOptions } from "../../app/Replay.ts"
import { badRequest } from "../ApiError.ts"
import { json, route } from "../Route.ts"
import { admin } from "./AdminApi.ts"

const line = (value: unknown) => `${JSON.stringify(value)}\n`

export const layer = route(
  "POST",
  "/admin/replay",
  admin(
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const mode = new URL(request.url, "http://admin").searchParams.get("mode") ?? "verify"
      if (mode !== "verify" && mode !== "apply") return yield* badRequest("mode must be verify or apply", "mode")
      const replay = yield* Replay
      const run = (options: ReplayOptions) => (mode === "apply" ? replay.apply(options) : replay.verifyWith(options))
      if (!(request.headers.accept ?? "").includes("application/x-ndjson")) return json(yield* run({}))
      // The client going away interrupts the stream and with it the replay (an apply then rolls back).
      const lines = Stream.callback<string>((queue) =>
        run({ onProgress: (progress) => Effect.asVoid(Queue.offer(queue, line({ progress }))) }).pipe(
          Effect.matchEffect({
            onSuccess: (report) => Queue.offer(queue, line({ report })),
            onFailure: (error) =>
              Queue.offer(queue, line({ error: { message: error.message, code: "store_unavailable" } }))
          }),
          Effect.andThen(Queue.end(queue))
        )
      )
      return HttpServerResponse.stream(Stream.encodeText(lines), {
        contentType: "application/x-ndjson",
        headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
      })
    })
  )
)
