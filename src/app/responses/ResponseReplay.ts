/**
 * `GET /v1/responses/{id}?stream=true&starting_after=N`: a background response's events replayed from storage, as
 * OpenAI resumes a stream: those after N, then, while the response runs (on any instance), each new one as its worker
 * appends it, until its terminal event. A response that finished without its terminal event stored (its worker
 * stopped between the two writes, and its lease ran out) ends with one made from the stored Response object, so a
 * replay always agrees with `GET`.
 */
import { Clock, Effect, Option, Stream } from "effect"
import type { BackgroundResponseStore, EventsAfter, StoredEvent } from "../ports/BackgroundResponseStore.ts"
import type { JsonObject } from "../ports/ResponseStore.ts"
import { sseEvent } from "../../plugins/text/convert/ChatStream.ts"

const TERMINAL_EVENTS = new Set(["response.completed", "response.incomplete", "response.failed"])

/** The SSE text of stored events (each with `event:` set to its type, as the live stream has). */
export const eventText = (events: ReadonlyArray<StoredEvent>): string =>
  events.map((e) => sseEvent(String(e.event.type), e.event)).join("")

/** Where a replay stands after one read: the events to write now, and whether it goes on. */
const step = (read: EventsAfter, after: number, show: (response: JsonObject) => JsonObject) => {
  const events = read.events.map((e) => {
    const response = e.event.response
    return typeof response === "object" && response !== null
      ? { ...e, event: { ...e.event, response: show(response as JsonObject) } }
      : e
  })
  const last = events.at(-1)?.seq ?? after
  if (events.some((e) => TERMINAL_EVENTS.has(String(e.event.type)))) return { events, last, done: true }
  if (read.live) return { events, last, done: false }
  const type = `response.${read.status}`
  if (!TERMINAL_EVENTS.has(type)) return { events, last, done: true } // cancelled: no terminal event, as at OpenAI
  const closing = { seq: last + 1, event: { type, response: show(read.response), sequence_number: last + 1 } }
  return { events: [...events, closing], last: last + 1, done: true }
}

/**
 * The replay as SSE text chunks, from a first read the caller made (so that an unknown id is its 404, not an empty
 * stream); later reads every `pollMillis` while the response runs. A store failure mid-replay ends it with an
 * `error` event.
 */
export const replayStream = (
  store: BackgroundResponseStore["Service"],
  accountId: string,
  id: string,
  first: EventsAfter,
  after: number,
  options: { readonly pollMillis: number; readonly show: (response: JsonObject) => JsonObject }
): Stream.Stream<string> =>
  Stream.paginate({ read: Option.some(first), after }, (state) =>
    Effect.gen(function* () {
      const read = Option.isSome(state.read)
        ? state.read.value
        : yield* Effect.andThen(
            Effect.sleep(options.pollMillis),
            Effect.flatMap(Clock.currentTimeMillis, (ms) => store.eventsAfter(accountId, id, state.after, new Date(ms)))
          )
      if (read === undefined) return [[], Option.none()] as const // deleted meanwhile
      const next = step(read, state.after, options.show)
      const text = next.events.length === 0 ? [] : [eventText(next.events)]
      return [text, next.done ? Option.none() : Option.some({ read: Option.none(), after: next.last })] as const
    }).pipe(
      Effect.catch(() =>
        Effect.succeed([
          [
            sseEvent("error", {
              type: "error",
              code: "store_unavailable",
              message: "the gateway's database is unavailable; resume with starting_after",
              param: null,
              sequence_number: state.after + 1
            })
          ],
          Option.none()
        ] as const)
      )
    )
  )
