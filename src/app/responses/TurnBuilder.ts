/**
 * A Responses API turn as the model is to be given it: the history the request continues (a stored response's chain,
 * or a conversation's items), the turn's own input with its `item_reference`s resolved, the oldest items dropped to
 * fit the context window under `truncation: "auto"`, and the whole decoded to the chat IR once, here.
 */
import { clip } from "../../domain/Quoted.ts"
import { Clock, Effect, Result } from "effect"
import { InvalidChatRequest } from "../ChatErrors.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { OperatorConfigData } from "../OperatorConfig.ts"
import type { ChatDialect } from "../ports/ChatDialects.ts"
import type { ConversationStore } from "../ports/ConversationStore.ts"
import type { JsonObject, ResponseStore } from "../ports/ResponseStore.ts"
import type { ChatRequest } from "../../plugins/text/convert/ChatIR.ts"
import { conversationIdOf } from "../../plugins/text/convert/responsesResponse.ts"
import { forModel, referencedIds, resolveReferences, turnItems } from "./Conversation.ts"
import { DEFAULT_CONTEXT_WINDOW, truncateOldest } from "./TurnHistory.ts"

const TERMINAL = new Set(["completed", "incomplete", "failed", "cancelled"])
const DEFAULT_OUTPUT_RESERVE = 4096

export interface Turn {
  readonly at: Date
  /** The turn's own input items, with ids. */
  readonly turn: ReadonlyArray<JsonObject>
  /** The body the model is given: the client's, its input the history and the turn (truncated if asked). */
  readonly body: JsonObject
  readonly request: ChatRequest
  readonly conversationId: string | undefined
}

export const makeTurnBuilder = (deps: {
  readonly store: ResponseStore["Service"]
  readonly conversations: ConversationStore["Service"]
  readonly dialect: ChatDialect
  readonly config: OperatorConfigData
}) => {
  const { store, conversations, dialect, config } = deps

  const previousHistory = (key: AuthenticatedKey, previousId: string, at: Date) =>
    Effect.gen(function* () {
      const chain = yield* store.chain(key.accountId, previousId, at)
      if (chain === undefined) {
        return yield* new InvalidChatRequest({
          param: "previous_response_id",
          message: `Previous response with id '${clip(previousId)}' not found.`
        })
      }
      if (!TERMINAL.has(chain.response.status)) {
        return yield* new InvalidChatRequest({
          param: "previous_response_id",
          message: `Previous response with id '${clip(previousId)}' is still ${chain.response.status}; wait until it finishes.`
        })
      }
      return chain.history
    })

  const conversationHistory = (key: AuthenticatedKey, conversationId: string) =>
    Effect.gen(function* () {
      const items = yield* conversations.items(key.accountId, conversationId)
      if (items === undefined) {
        return yield* new InvalidChatRequest({
          param: "conversation",
          message: `Conversation with id '${clip(conversationId)}' not found.`
        })
      }
      return items
    })

  /** The oldest items dropped until the input fits the model's window, less what its output may take. */
  const truncated = (body: JsonObject, items: ReadonlyArray<JsonObject>) =>
    Effect.gen(function* () {
      const model = config.models.find((m) => m.id === body.model)
      const window = model?.contextWindow ?? DEFAULT_CONTEXT_WINDOW
      const reserve =
        typeof body.max_output_tokens === "number"
          ? body.max_output_tokens
          : (model?.maxOutputTokens ?? DEFAULT_OUTPUT_RESERVE)
      const whole = yield* dialect.countInput({ ...body, input: forModel(items) })
      if (whole <= window - reserve) return items
      const fixed = yield* dialect.countInput({ ...body, input: [] })
      const tokens = yield* Effect.forEach(forModel(items), (item) => dialect.countInput({ input: [item] }))
      return truncateOldest(items, tokens, window - reserve - fixed)
    })

  return Effect.fnUntraced(function* (key: AuthenticatedKey, body: JsonObject) {
    const at = new Date(yield* Clock.currentTimeMillis)
    const previousId = typeof body.previous_response_id === "string" ? body.previous_response_id : undefined
    const conversationId = conversationIdOf(body.conversation)
    if (previousId !== undefined && conversationId !== undefined) {
      return yield* new InvalidChatRequest({
        param: "previous_response_id",
        message: "previous_response_id cannot be used together with conversation"
      })
    }
    const history =
      previousId !== undefined
        ? yield* previousHistory(key, previousId, at)
        : conversationId !== undefined
          ? yield* conversationHistory(key, conversationId)
          : []
    const ids = referencedIds(body.input)
    const found = ids.length === 0 ? new Map<string, JsonObject>() : yield* store.findItems(key.accountId, ids, at)
    const resolved = resolveReferences(body.input, found)
    if (resolved.missing !== undefined) {
      return yield* new InvalidChatRequest({
        param: `input.${resolved.missing}.id`,
        message: `Item with id '${clip(ids.find((id) => !found.has(id)) ?? "")}' not found.`
      })
    }
    const turn = turnItems(resolved.input)
    const all = [...history, ...turn]
    const items = body.truncation === "auto" ? yield* truncated(body, all) : all
    const expanded: JsonObject = { ...body, input: forModel(items) }
    const decoded = dialect.decode(expanded, { model: String(body.model), stream: body.stream === true })
    if (Result.isFailure(decoded)) {
      return yield* new InvalidChatRequest({
        param: decoded.failure.param === "" ? null : decoded.failure.param,
        message: decoded.failure.message
      })
    }
    return { at, turn, body: expanded, request: decoded.success, conversationId } satisfies Turn
  })
}
