/**
 * The Responses API around the chat pipeline: a turn's conversation rebuilt from storage (`previous_response_id`,
 * `item_reference`s), the response stored before its last byte leaves (so the client's next turn finds it), stored
 * responses read, listed and deleted by their owner only, background responses run here and cancelled, and expired
 * ones swept. Billing is the chat pipeline's: the same hold, settlement and refunds on every path.
 */
import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Layer, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { ChatGateway, type ChatError, type ChatResult } from "../ChatGateway.ts"
import { InvalidChatRequest } from "../ChatErrors.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import { OperatorConfig } from "../OperatorConfig.ts"
import { ChatDialects } from "../ports/ChatDialects.ts"
import { type JsonObject, ResponseStore, type StoredResponse } from "../ports/ResponseStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import {
  forModel,
  historyOf,
  type ItemPage,
  itemPage,
  referencedIds,
  resolveReferences,
  turnItems
} from "./Conversation.ts"
import { ResponseNotCancellable, ResponseNotFound } from "./ResponsesErrors.ts"
import { echoedSettings, forClient } from "../../plugins/text/convert/responsesResponse.ts"

const DAY_MS = 86_400_000
const SWEEP_EVERY = Duration.hours(1)
const TERMINAL = new Set(["completed", "incomplete", "failed", "cancelled"])

export interface ResponsesInput {
  readonly body: JsonObject
  readonly key: AuthenticatedKey
  readonly requestId: string
}

/** A stored response as a client sees it: encrypted reasoning only when it asks with `include`. */
const shownTo = (response: JsonObject, include: ReadonlyArray<string>): JsonObject => forClient(response, { include })

export class ResponsesGateway extends Context.Service<
  ResponsesGateway,
  {
    readonly create: (input: ResponsesInput) => Effect.Effect<ChatResult, ChatError>
    readonly retrieve: (
      key: AuthenticatedKey,
      id: string,
      include: ReadonlyArray<string>
    ) => Effect.Effect<JsonObject, ResponseNotFound | StoreUnavailable>
    readonly remove: (
      key: AuthenticatedKey,
      id: string
    ) => Effect.Effect<JsonObject, ResponseNotFound | StoreUnavailable>
    readonly cancel: (
      key: AuthenticatedKey,
      id: string
    ) => Effect.Effect<JsonObject, ResponseNotFound | ResponseNotCancellable | StoreUnavailable>
    readonly inputItems: (
      key: AuthenticatedKey,
      id: string,
      page: Parameters<typeof itemPage>[1]
    ) => Effect.Effect<ItemPage, ResponseNotFound | StoreUnavailable>
    readonly inputTokens: (
      key: AuthenticatedKey,
      body: JsonObject
    ) => Effect.Effect<number, InvalidChatRequest | StoreUnavailable>
  }
>()("tollgate/app/responses/ResponsesGateway") {
  static readonly layer = Layer.effect(
    ResponsesGateway,
    Effect.gen(function* () {
      const chat = yield* ChatGateway
      const store = yield* ResponseStore
      const dialects = yield* ChatDialects
      const config = yield* OperatorConfig
      const retentionMs = (config.responses?.retentionDays ?? 30) * DAY_MS
      /** Background responses running in this instance, to cancel. */
      const running = new Map<string, Fiber.Fiber<unknown, unknown>>()

      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      // Expired responses go once an hour (and at start); a failed sweep is retried at the next.
      yield* Effect.flatMap(now, store.sweep).pipe(
        Effect.tap((n) =>
          n > 0 ? Effect.logInfo("expired responses deleted").pipe(Effect.annotateLogs({ n })) : Effect.void
        ),
        Effect.catch((error) => Effect.logWarning("response retention sweep failed", error)),
        Effect.repeat(Schedule.spaced(SWEEP_EVERY)),
        Effect.forkScoped
      )

      /** The history `previous_response_id` names, and the turn's input with its references resolved. */
      const conversation = (key: AuthenticatedKey, body: JsonObject) =>
        Effect.gen(function* () {
          const at = yield* now
          let history: ReadonlyArray<JsonObject> = []
          const previousId = body.previous_response_id
          if (previousId !== undefined && previousId !== null) {
            if (typeof previousId !== "string") {
              return yield* new InvalidChatRequest({ param: "previous_response_id", message: "expected a string" })
            }
            const previous = yield* store.find(key.accountId, previousId, at)
            if (previous === undefined) {
              return yield* new InvalidChatRequest({
                param: "previous_response_id",
                message: `Previous response with id '${previousId}' not found.`
              })
            }
            if (!TERMINAL.has(previous.status)) {
              return yield* new InvalidChatRequest({
                param: "previous_response_id",
                message: `Previous response with id '${previousId}' is still ${previous.status}; wait until it finishes.`
              })
            }
            history = historyOf(previous.inputItems, previous.response)
          }
          const ids = referencedIds(body.input)
          const found =
            ids.length === 0 ? new Map<string, JsonObject>() : yield* store.findItems(key.accountId, ids, at)
          const resolved = resolveReferences(body.input, found)
          if (resolved.missing !== undefined) {
            return yield* new InvalidChatRequest({
              param: `input.${resolved.missing}.id`,
              message: `Item with id '${ids.find((id) => !found.has(id)) ?? ""}' not found.`
            })
          }
          return { history, turn: turnItems(resolved.input), at }
        })

      const create = Effect.fnUntraced(function* (input: ResponsesInput) {
        const { body, key } = input
        if (body.conversation !== undefined && body.conversation !== null) {
          return yield* new InvalidChatRequest({
            param: "conversation",
            message: "conversations are not offered by this gateway; chain responses with previous_response_id"
          })
        }
        const stored = body.store !== false
        const background = body.background === true
        if (background && !stored) {
          return yield* new InvalidChatRequest({
            param: "background",
            message: "a background response must be stored (store: true)"
          })
        }
        if (background && body.stream === true) {
          return yield* new InvalidChatRequest({
            param: "stream",
            message: "background responses are not streamed by this gateway; poll GET /v1/responses/{id} instead"
          })
        }
        const { history, turn, at } = yield* conversation(key, body)
        const id = `resp_${randomUUID().replaceAll("-", "")}`
        const model = typeof body.model === "string" ? body.model : ""
        const modelInput = forModel([...history, ...turn])
        const expanded: JsonObject = { ...body, input: modelInput }
        const { input: _input, ...settings } = body
        const record = (response: JsonObject): StoredResponse => ({
          id,
          accountId: key.accountId,
          keyId: key.keyId,
          model,
          status: typeof response.status === "string" ? response.status : "completed",
          previousResponseId: typeof body.previous_response_id === "string" ? body.previous_response_id : undefined,
          createdAt: at,
          expiresAt: new Date(at.getTime() + retentionMs),
          request: settings,
          inputItems: [...history, ...turn],
          response
        })
        const keep = (response: JsonObject): Effect.Effect<void> =>
          stored
            ? store
                .save(record(response), turn)
                .pipe(Effect.catch((error) => Effect.logError("a response could not be stored", error)))
            : Effect.void
        const call = (over: JsonObject) =>
          chat.chat({ dialect: "responses", body: over, key, requestId: input.requestId, responseId: id, keep })
        if (!background) return yield* call(expanded)

        // Background: stored as queued, run here, the client polls. Its hold stays until it ends or is cancelled.
        const createdAt = Math.floor(at.getTime() / 1000)
        const queued: JsonObject = {
          id,
          object: "response",
          created_at: createdAt,
          status: "queued",
          error: null,
          incomplete_details: null,
          model,
          output: [],
          ...echoedSettings(body)
        }
        yield* store.save(record(queued), turn)
        const fiber = yield* call({ ...expanded, stream: false }).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)
              ? Effect.void
              : keep({
                  ...queued,
                  status: "failed",
                  error: { code: "server_error", message: failureMessage(exit.cause) }
                })
          ),
          Effect.ensuring(Effect.sync(() => running.delete(id))),
          Effect.forkDetach
        )
        running.set(id, fiber)
        return { _tag: "Json", body: queued } satisfies ChatResult
      })

      const owned = (key: AuthenticatedKey, id: string) =>
        Effect.gen(function* () {
          const found = yield* store.find(key.accountId, id, yield* now)
          if (found === undefined) return yield* new ResponseNotFound({ id })
          return found
        })

      const cancel = (key: AuthenticatedKey, id: string) =>
        Effect.gen(function* () {
          const found = yield* owned(key, id)
          if (found.response.background !== true) {
            return yield* new ResponseNotCancellable({ id, message: "Only background responses can be cancelled." })
          }
          if (found.status === "cancelled") return shownTo(found.response, [])
          if (TERMINAL.has(found.status)) {
            return yield* new ResponseNotCancellable({
              id,
              message: `Cannot cancel a response with status '${found.status}'.`
            })
          }
          const fiber = running.get(id)
          // Interrupting the call aborts the upstream request and releases the whole hold.
          if (fiber !== undefined) yield* Fiber.interrupt(fiber)
          const cancelled = { ...found.response, status: "cancelled" }
          yield* store.save({ ...found, status: "cancelled", response: cancelled }, [])
          return shownTo(cancelled, [])
        })

      return ResponsesGateway.of({
        create,
        retrieve: (key, id, include) => Effect.map(owned(key, id), (found) => shownTo(found.response, include)),
        remove: (key, id) =>
          Effect.gen(function* () {
            const fiber = running.get(id)
            if (!(yield* store.remove(key.accountId, id))) return yield* new ResponseNotFound({ id })
            if (fiber !== undefined) yield* Fiber.interrupt(fiber)
            return { id, object: "response", deleted: true }
          }),
        cancel,
        inputItems: (key, id, page) => Effect.map(owned(key, id), (found) => itemPage(found.inputItems, page)),
        inputTokens: (key, body) =>
          Effect.gen(function* () {
            const { history, turn } = yield* conversation(key, body)
            return yield* dialects.responses.countInput({ ...body, input: forModel([...history, ...turn]) })
          })
      })
    })
  )
}

const failureMessage = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? error.message
    : "the response failed"
}
