/**
 * The Responses API around the chat pipeline: a turn built from storage (TurnBuilder.ts), the response stored with its
 * bill before its final event leaves (the pipeline's storage step, DeliveredTurn.ts), background responses queued as
 * durable work for any instance's worker (BackgroundWorker.ts) and replayed as streams, stored responses read, listed,
 * cancelled and deleted by their owner only, and expired ones swept. Billing is the chat pipeline's throughout.
 */
import { Clock, Context, Duration, Effect, Layer, Schedule, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { ChatGateway, type ChatError, type ChatInput, type ChatResult } from "../ChatGateway.ts"
import { InvalidChatRequest } from "../ChatErrors.ts"
import type { TurnToStore } from "../DeliveredTurn.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import { OperatorConfig } from "../OperatorConfig.ts"
import { BackgroundResponseStore } from "../ports/BackgroundResponseStore.ts"
import { ChatDialects } from "../ports/ChatDialects.ts"
import { ConversationStore } from "../ports/ConversationStore.ts"
import { type JsonObject, ResponseStore, type StoredResponse } from "../ports/ResponseStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import { itemPage, type ItemPage } from "./Conversation.ts"
import { BackgroundResponses } from "./BackgroundWorker.ts"
import { replayStream } from "./ResponseReplay.ts"
import { ResponseNotCancellable, ResponseNotFound } from "./ResponsesErrors.ts"
import { makeTurnBuilder, type Turn } from "./TurnBuilder.ts"
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

const encoder = new TextEncoder()

/** A new response as it is stored (its body and status come later), and the conversation its turn joins, if any. */
interface NewResponse {
  readonly row: Omit<StoredResponse, "response" | "status">
  readonly conversation: NonNullable<TurnToStore["conversation"]> | undefined
}

const newResponse = (input: ResponsesInput, turn: Turn, retentionMs: number): NewResponse => {
  const { body, key } = input
  const { input: _input, ...settings } = body
  return {
    row: {
      id: `resp_${randomUUID().replaceAll("-", "")}`,
      accountId: key.accountId,
      keyId: key.keyId,
      model: typeof body.model === "string" ? body.model : "",
      previousResponseId: typeof body.previous_response_id === "string" ? body.previous_response_id : undefined,
      createdAt: turn.at,
      expiresAt: new Date(turn.at.getTime() + retentionMs),
      request: settings,
      turnItems: turn.turn,
      background: body.background === true
    },
    conversation:
      turn.conversationId === undefined
        ? undefined
        : { conversationId: turn.conversationId, accountId: key.accountId, items: turn.turn }
  }
}

/** A foreground response for the chat pipeline: it (unless `store: false`) and its turn are kept with its bill. */
const inForeground = (input: ResponsesInput, turn: Turn, created: NewResponse): ChatInput => {
  const stored = input.body.store !== false
  const { conversation } = created
  const toStore: TurnToStore | undefined =
    stored || conversation !== undefined ? { response: stored ? created.row : undefined, conversation } : undefined
  return {
    dialect: "responses",
    body: turn.body,
    key: input.key,
    requestId: input.requestId,
    responseId: created.row.id,
    request: turn.request,
    ...(toStore === undefined ? {} : { stored: toStore })
  }
}

/** A background response's first state, as `GET` shows it until a worker takes it. */
const queuedResponse = (body: JsonObject, created: NewResponse, turn: Turn): JsonObject => ({
  id: created.row.id,
  object: "response",
  created_at: Math.floor(turn.at.getTime() / 1000),
  status: "queued",
  error: null,
  incomplete_details: null,
  model: created.row.model,
  output: [],
  ...echoedSettings(body)
})

/** What a worker needs to run a background response: its body, its key as stored, its conversation. */
const backgroundRun = (input: ResponsesInput, turn: Turn) => {
  const { key } = input
  return {
    body: turn.body,
    key: {
      keyId: key.keyId,
      accountId: key.accountId,
      models: key.models,
      spendLimit: key.spendLimit === null ? null : String(key.spendLimit),
      rateLimits: key.rateLimits ?? null
    },
    requestId: input.requestId,
    conversation: turn.conversationId === undefined ? null : { conversationId: turn.conversationId, items: turn.turn }
  }
}

type Lookup<A> = Effect.Effect<A, ResponseNotFound | StoreUnavailable>

export class ResponsesGateway extends Context.Service<
  ResponsesGateway,
  {
    readonly create: (input: ResponsesInput) => Effect.Effect<ChatResult, ChatError>
    readonly retrieve: (key: AuthenticatedKey, id: string, include: ReadonlyArray<string>) => Lookup<JsonObject>
    /** A background response's events after `after` as SSE, then its new ones while it runs. */
    readonly replay: (
      key: AuthenticatedKey,
      id: string,
      after: number,
      include: ReadonlyArray<string>
    ) => Effect.Effect<Stream.Stream<Uint8Array>, ResponseNotFound | InvalidChatRequest | StoreUnavailable>
    readonly remove: (key: AuthenticatedKey, id: string) => Lookup<JsonObject>
    readonly cancel: (
      key: AuthenticatedKey,
      id: string
    ) => Effect.Effect<JsonObject, ResponseNotFound | ResponseNotCancellable | StoreUnavailable>
    readonly inputItems: (key: AuthenticatedKey, id: string, page: Parameters<typeof itemPage>[1]) => Lookup<ItemPage>
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
      const background = yield* BackgroundResponseStore
      const worker = yield* BackgroundResponses
      const conversations = yield* ConversationStore
      const dialects = yield* ChatDialects
      const config = yield* OperatorConfig
      const retentionMs = (config.responses?.retentionDays ?? 30) * DAY_MS
      const buildTurn = makeTurnBuilder({ store, conversations, dialect: dialects.responses, config })
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

      /** A background response: queued as durable work with its first event; any instance's worker runs it. */
      const queue = Effect.fnUntraced(function* (input: ResponsesInput, turn: Turn, created: NewResponse) {
        const queued = queuedResponse(input.body, created, turn)
        const first = { type: "response.queued", response: queued, sequence_number: 0 }
        yield* background.enqueue({ ...created.row, status: "queued", response: queued }, backgroundRun(input, turn), {
          seq: 0,
          event: first
        })
        yield* worker.wake
        if (input.body.stream !== true) return { _tag: "Json", body: shownTo(queued, []) } satisfies ChatResult
        // Just queued: there is a response to replay.
        const frames = yield* replay(input.key, created.row.id, -1, []).pipe(
          Effect.catchTag("ResponseNotFound", Effect.die)
        )
        return { _tag: "Stream", frames } satisfies ChatResult
      })

      // The steps: refuse a background response that is not to be stored, build the turn from storage, then run it
      // through the chat pipeline now (stored with its bill) or queue it.
      const create = Effect.fnUntraced(function* (input: ResponsesInput) {
        const { body, key } = input
        if (body.background === true && body.store === false) {
          return yield* new InvalidChatRequest({
            param: "background",
            message: "a background response must be stored (store: true)"
          })
        }
        const turn = yield* buildTurn(key, body)
        const created = newResponse(input, turn, retentionMs)
        return body.background === true
          ? yield* queue(input, turn, created)
          : yield* chat.chat(inForeground(input, turn, created))
      })

      const owned = (key: AuthenticatedKey, id: string) =>
        Effect.gen(function* () {
          const found = yield* store.find(key.accountId, id, yield* now)
          if (found === undefined) return yield* new ResponseNotFound({ id })
          return found
        })

      const replay = (key: AuthenticatedKey, id: string, after: number, include: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const first = yield* background.eventsAfter(key.accountId, id, after, yield* now)
          if (first === undefined) return yield* new ResponseNotFound({ id })
          if (!first.background) {
            return yield* new InvalidChatRequest({
              param: "stream",
              message: "only a background response can be streamed again; create it with background: true"
            })
          }
          return replayStream(background, key.accountId, id, first, after, {
            pollMillis: worker.options.replayPollMillis,
            show: (response) => shownTo(response, include)
          }).pipe(Stream.map((text) => encoder.encode(text)))
        })

      const cancel = (
        key: AuthenticatedKey,
        id: string
      ): Effect.Effect<JsonObject, ResponseNotFound | ResponseNotCancellable | StoreUnavailable> =>
        Effect.gen(function* () {
          const found = yield* owned(key, id)
          if (!found.background) {
            return yield* new ResponseNotCancellable({ id, message: "Only background responses can be cancelled." })
          }
          if (found.status === "cancelled") return shownTo(found.response, [])
          if (TERMINAL.has(found.status)) {
            return yield* new ResponseNotCancellable({
              id,
              message: `Cannot cancel a response with status '${found.status}'.`
            })
          }
          // The worker running it (on any instance) stops at its next renewal: the upstream call is aborted and its
          // whole hold released.
          const cancelled = { ...found.response, status: "cancelled" }
          if (yield* background.cancel(key.accountId, id, cancelled)) return shownTo(cancelled, [])
          return yield* cancel(key, id) // it finished meanwhile: answered as it is now
        })

      return ResponsesGateway.of({
        create,
        retrieve: (key, id, include) => Effect.map(owned(key, id), (found) => shownTo(found.response, include)),
        replay,
        remove: (key, id) =>
          Effect.gen(function* () {
            if (!(yield* store.remove(key.accountId, id))) return yield* new ResponseNotFound({ id })
            return { id, object: "response", deleted: true }
          }),
        cancel,
        inputItems: (key, id, page) =>
          Effect.gen(function* () {
            const chain = yield* store.chain(key.accountId, id, yield* now)
            if (chain === undefined) return yield* new ResponseNotFound({ id })
            const output = Array.isArray(chain.response.response.output) ? chain.response.response.output.length : 0
            // Everything its model was given: the chain's items less this response's own output.
            return itemPage(chain.history.slice(0, chain.history.length - output), page)
          }),
        inputTokens: (key, body) =>
          Effect.flatMap(buildTurn(key, body), (turn) => dialects.responses.countInput(turn.body))
      })
    })
  )
}
