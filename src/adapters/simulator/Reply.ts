/**
 * The simulated model: a pure function from a dialect-neutral view of the request to what the reply contains.
 * Same turn in, same reply out; the reply echoes the last user message so tests can see what reached the upstream.
 */
import { createHash } from "node:crypto"
import { countText, truncateToTokens } from "../tokenizer/Tokenizer.ts"
import { isRecord } from "./Json.ts"
import { instanceOf } from "./SchemaInstance.ts"

export interface ToolSpec {
  readonly name: string
  readonly schema: unknown
}

export type ToolMode =
  | { readonly _tag: "Auto" }
  | { readonly _tag: "None" }
  | { readonly _tag: "Required" }
  | { readonly _tag: "Named"; readonly name: string }

/**
 * What the request asked the reply's text to be: free text, any JSON object (OpenAI `json_object`, Gemini's JSON mime
 * type without a schema), JSON valid against a schema, or one of a schema's enum values as plain text (Gemini's
 * `text/x.enum`).
 */
export type OutputFormat =
  | { readonly _tag: "Text" }
  | { readonly _tag: "JsonObject" }
  | { readonly _tag: "JsonSchema"; readonly schema: unknown }
  | { readonly _tag: "Enum"; readonly schema: unknown }

export interface Turn {
  /** Text of the last user message ("" when there is none). */
  readonly lastUserText: string
  /** The tool result when the last message answers a tool call. */
  readonly toolResult: string | undefined
  readonly tools: ReadonlyArray<ToolSpec>
  readonly toolMode: ToolMode
  readonly thinking: boolean
  /** Output budget shared by thinking and text (the request's max tokens). */
  readonly maxTokens: number | undefined
  /** Target length of a text reply before the budget bounds it. */
  readonly replyTokens: number
  readonly stopSequences: ReadonlyArray<string>
  /** Anything that makes two requests different (the serialized conversation), so filler varies between them. */
  readonly seed: string
  /** Omitted → free text. */
  readonly output?: OutputFormat | undefined
}

export interface ToolCallPlan {
  readonly name: string
  readonly arguments: Record<string, unknown>
  /** A stable id suffix for this call: `[a-zA-Z0-9]` only, so every vendor's id pattern accepts it. */
  readonly key: string
}

export type FinishReason = "stop" | "length" | "tool_call" | "stop_sequence"

export interface ReplyPlan {
  readonly thinking: string | undefined
  readonly text: string | undefined
  readonly toolCall: ToolCallPlan | undefined
  readonly finish: FinishReason
  readonly stopSequence: string | undefined
  readonly thinkingTokens: number
  /** Output tokens: thinking + text + tool call name and arguments. */
  readonly outputTokens: number
}

export const DEFAULT_REPLY_TOKENS = 24

const FILLER = [
  "The simulator answers deterministically.",
  "Every request with the same input gets the same reply.",
  "Usage counts come from a real tokenizer.",
  "This sentence exists to make the reply longer.",
  "Streaming splits the reply into small pieces.",
  "Nothing here was produced by a language model.",
  "Tests can rely on this text staying stable.",
  "Tokens are counted with the o200k_base encoding."
] as const

const ASKS_FOR_TOOL = /\buse (?:the|a|your|my) tools?\b|\bcall\b|\binvoke\b|\buse tools?\b/i

const digest = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

/** Longest echo of the prompt: a reply, its thinking and its stream stay small whatever the prompt. */
const MAX_EXCERPT_CHARS = 1000
const WORD = /\S+/g

/** The first `count` words, read no further than needed (a prompt can be 30 MB), at most MAX_EXCERPT_CHARS long. */
const firstWords = (text: string, count: number): string => {
  const words: Array<string> = []
  WORD.lastIndex = 0
  let more = false
  for (let match = WORD.exec(text); match !== null; match = WORD.exec(text)) {
    if (words.length === count) {
      more = true
      break
    }
    words.push(match[0])
  }
  const excerpt = words.join(" ")
  if (excerpt.length <= MAX_EXCERPT_CHARS) return excerpt + (more ? "…" : "")
  // Never between the two halves of a surrogate pair.
  const cut =
    (excerpt.charCodeAt(MAX_EXCERPT_CHARS - 1) & 0xfc00) === 0xd800 ? MAX_EXCERPT_CHARS - 1 : MAX_EXCERPT_CHARS
  return `${excerpt.slice(0, cut)}…`
}

/** Characters of a conversation's strings that go into its seed as they are; longer ones are summarized. */
const SEED_CHARS = 1_000_000

/**
 * A request's seed: its serialized conversation, identical to `JSON.stringify(conversation)` while its strings total
 * at most SEED_CHARS characters. Past that, each further string is represented by its length and its ends, so a
 * 30 MB prompt is not serialized (and hashed) whole on the event loop.
 */
export const conversationSeed = (conversation: unknown): string => {
  let room = SEED_CHARS
  return JSON.stringify(conversation, (_key, value: unknown) => {
    if (typeof value !== "string") return value
    if (value.length <= room) {
      room -= value.length
      return value
    }
    room = 0
    return `${value.length}:${value.slice(0, 64)}…${value.slice(-64)}`
  })
}

const chooseTool = (turn: Turn): ToolSpec | undefined => {
  if (turn.tools.length === 0) return undefined
  switch (turn.toolMode._tag) {
    case "None":
      return undefined
    case "Named": {
      const name = turn.toolMode.name
      return turn.tools.find((tool) => tool.name === name) ?? { name, schema: {} }
    }
    case "Required":
    case "Auto": {
      const text = turn.lastUserText.toLowerCase()
      const mentioned = turn.tools.find(
        (tool) => text.includes(tool.name.toLowerCase()) || text.includes(tool.name.toLowerCase().replace(/_/g, " "))
      )
      if (turn.toolMode._tag === "Required") return mentioned ?? turn.tools[0]
      // A tool result is answered with text, otherwise clients that loop until no tool call would never stop.
      if (turn.toolResult !== undefined) return undefined
      return mentioned ?? (ASKS_FOR_TOOL.test(turn.lastUserText) ? turn.tools[0] : undefined)
    }
  }
}

const fillerText = (seed: string, targetTokens: number, lead: string): string => {
  let text = lead
  let index = Number.parseInt(seed.slice(0, 8), 16) % FILLER.length
  // The filler starts on its own line so the echoed words stay easy to find.
  let separator = "\n"
  // Sentences split on whitespace, so their counts add up; counting each piece once keeps long replies linear.
  let estimate = countText(text)
  for (;;) {
    while (estimate < targetTokens) {
      const piece = `${separator}${FILLER[index]}`
      text += piece
      estimate += countText(piece)
      index = (index + 1) % FILLER.length
      separator = " "
    }
    const exact = countText(text)
    if (exact >= targetTokens) return truncateToTokens(text, targetTokens)
    estimate = exact
  }
}

const applyStopSequences = (
  text: string,
  stopSequences: ReadonlyArray<string>
): { readonly text: string; readonly stopSequence: string | undefined } => {
  let cut: { index: number; sequence: string } | undefined
  for (const sequence of stopSequences) {
    const index = sequence.length > 0 ? text.indexOf(sequence) : -1
    if (index >= 0 && (cut === undefined || index < cut.index)) cut = { index, sequence }
  }
  return cut === undefined
    ? { text, stopSequence: undefined }
    : { text: text.slice(0, cut.index), stopSequence: cut.sequence }
}

const replyLength = (turn: Turn, lead: string): number =>
  Math.max(turn.replyTokens, turn.toolResult !== undefined ? countText(lead) : 0)

/**
 * The reply's text when the request constrains it: compact JSON valid against the schema (every property filled,
 * as strict mode demands), an object carrying the echo when any JSON object will do, or an enum member.
 */
const structuredText = (output: OutputFormat | undefined, seed: string, lead: string): string | undefined => {
  switch (output?._tag) {
    case undefined:
    case "Text":
      return undefined
    case "JsonObject":
      return JSON.stringify({ reply: lead })
    case "JsonSchema":
      return JSON.stringify(instanceOf(output.schema, { seed, fill: "all" }))
    case "Enum": {
      const value = instanceOf(output.schema, { seed, fill: "all" })
      return typeof value === "string" ? value : JSON.stringify(value)
    }
  }
}

/** What the simulated model says for this turn. */
export const planReply = (turn: Turn): ReplyPlan => {
  const seed = digest(turn.seed)
  const tool = chooseTool(turn)
  const budget = turn.maxTokens ?? Number.POSITIVE_INFINITY
  const excerpt = firstWords(turn.lastUserText, 12)

  const fullThinking = turn.thinking
    ? `The user wrote: "${excerpt}". ` +
      (tool !== undefined
        ? `The ${tool.name} tool can answer this, so I will call it.`
        : turn.toolResult !== undefined
          ? "The tool has answered, so I will report its result."
          : "I will reply with an echo of the message.")
    : undefined
  const thinking = fullThinking === undefined ? undefined : truncateToTokens(fullThinking, budget)
  const thinkingTokens = thinking === undefined ? 0 : countText(thinking)
  const thinkingCut = thinking !== fullThinking

  if (tool !== undefined && !thinkingCut) {
    const generated = instanceOf(tool.schema, { seed: `${seed}:${tool.name}`, fill: "required" })
    const args = isRecord(generated) ? { ...generated } : {}
    const key = digest(`${seed}:${tool.name}`).slice(0, 24)
    return {
      thinking,
      text: undefined,
      toolCall: { name: tool.name, arguments: args, key },
      finish: "tool_call",
      stopSequence: undefined,
      thinkingTokens,
      outputTokens: thinkingTokens + countText(tool.name) + countText(JSON.stringify(args))
    }
  }

  const lead = turn.toolResult !== undefined ? `The tool returned: ${turn.toolResult}` : `Echo: ${excerpt}`
  const wanted = structuredText(turn.output, seed, lead) ?? fillerText(seed, replyLength(turn, lead), lead)
  const allowed = truncateToTokens(wanted, budget - thinkingTokens)
  const stopped = applyStopSequences(allowed, turn.stopSequences)
  const finish: FinishReason =
    stopped.stopSequence !== undefined ? "stop_sequence" : thinkingCut || allowed !== wanted ? "length" : "stop"
  const text = thinkingCut ? undefined : stopped.text
  return {
    thinking,
    text,
    toolCall: undefined,
    finish,
    stopSequence: stopped.stopSequence,
    thinkingTokens,
    outputTokens: thinkingTokens + (text === undefined ? 0 : countText(text))
  }
}
