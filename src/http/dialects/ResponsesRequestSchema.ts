/**
 * OpenAI's `CreateResponse` request, field by field, as the gateway accepts it: types, ranges and enums as OpenAI's
 * published schema gives them (test/http/responses/ResponsesRequestSchema.test.ts checks the two agree), every id a
 * client may send bounded so storage never refuses what the edge accepted. Fields the schema requires but OpenAI's
 * own API and SDKs leave out in practice (a function tool's `strict`, an image's `detail`) are not required. Tools
 * of every type of OpenAI's `Tool` union are accepted by shape; whether a model serves one is the converter's call.
 */
import {
  anyObject,
  arrayOf,
  bool,
  byType,
  type Check,
  either,
  type FieldProblem,
  int,
  isRecord,
  nullable,
  num,
  object,
  oneOf,
  str
} from "../FieldCheck.ts"

/** The longest id a client may give an item, a response or a conversation: storage indexes them. */
export const MAX_ID_LENGTH = 256

const id = str({ min: 1, max: MAX_ID_LENGTH })
const status = oneOf(["in_progress", "completed", "incomplete"])
const isString = (value: unknown) => typeof value === "string"
const isArray = (value: unknown) => Array.isArray(value)

/** `metadata`: at most 16 string values, keys of at most 64 characters and values of at most 512. */
export const metadata: Check = (value, path) => {
  if (value === null) return undefined
  if (!isRecord(value)) return anyObject(value, path)
  const entries = Object.entries(value)
  if (entries.length > 16) return { param: path, message: `${path}: at most 16 keys, got ${entries.length}` }
  for (const [key, field] of entries) {
    if (key.length > 64) return { param: path, message: `${path}: keys of at most 64 characters` }
    const found = str({ max: 512 })(field, `${path}.${key}`)
    if (found !== undefined) return found
  }
  return undefined
}

const inputContent = byType(
  {
    input_text: object({ text: str() }, ["text"]),
    output_text: object({ text: str(), annotations: arrayOf(anyObject) }, ["text"]),
    refusal: object({ refusal: str() }, ["refusal"]),
    input_image: object({
      image_url: nullable(str()),
      file_id: nullable(id),
      detail: oneOf(["low", "high", "auto", "original"])
    }),
    input_file: object({
      file_id: nullable(id),
      filename: str(),
      file_data: str(),
      file_url: str(),
      detail: oneOf(["auto", "low", "high"])
    })
  },
  { known: true }
)

const message = object(
  {
    id,
    role: oneOf(["user", "assistant", "system", "developer"]),
    content: either("a string or an array of content parts", [
      [isString, str()],
      [isArray, arrayOf(inputContent)]
    ]),
    status
  },
  ["role", "content"]
)

const outputContent = either("a string or an array of content parts", [
  [isString, str()],
  [isArray, arrayOf(inputContent)]
])

/** One item of `input` (or of a conversation). Item types without a rule here pass by shape (an object and a type). */
export const inputItem = byType(
  {
    message,
    function_call: object({ id, call_id: id, name: str({ min: 1, max: 128 }), arguments: str(), status }, [
      "call_id",
      "name",
      "arguments"
    ]),
    function_call_output: object({ id: nullable(id), call_id: id, output: outputContent, status: nullable(status) }, [
      "call_id",
      "output"
    ]),
    reasoning: object({
      id,
      summary: arrayOf(object({ type: oneOf(["summary_text"]), text: str() }, ["text"])),
      encrypted_content: nullable(str()),
      status
    }),
    item_reference: object({ id }, ["id"]),
    custom_tool_call: object({ id, call_id: id, name: str(), input: str() }, ["call_id", "name", "input"]),
    custom_tool_call_output: object({ id, call_id: id, output: outputContent }, ["call_id", "output"])
  },
  { fallback: "message" }
)

const anyId = object({ id: nullable(id) })

/** Every item of the union may carry an `id`: bounded whatever its type. */
const boundedItem: Check = (value, path) => inputItem(value, path) ?? anyId(value, path)

const functionTool = object(
  {
    name: str({ min: 1, max: 128 }),
    parameters: nullable(anyObject),
    strict: nullable(bool),
    description: nullable(str())
  },
  ["name"]
)

/** A tool of any type of OpenAI's `Tool` union, by shape; the ones with rules are checked further. */
const toolShapes = byType({
  function: functionTool,
  custom: object({ name: str({ min: 1, max: 128 }) }, ["name"]),
  namespace: object({ name: str({ min: 1 }), tools: arrayOf(anyObject) }, ["name"]),
  mcp: object({ server_label: str() }, ["server_label"]),
  file_search: object({ vector_store_ids: arrayOf(str()) })
})

export const tool: Check = (value, path) => {
  const found = toolShapes(value, path)
  if (found !== undefined) return found
  return isRecord(value) && value.type === undefined
    ? { param: `${path}.type`, message: `${path}.type: Missing required parameter: '${path}.type'.` }
    : undefined
}

const toolChoice = either("'none', 'auto', 'required' or a tool choice object", [
  [isString, oneOf(["none", "auto", "required"])],
  [
    isRecord,
    byType({
      function: object({ name: str() }, ["name"]),
      custom: object({ name: str() }, ["name"]),
      mcp: object({ server_label: str(), name: nullable(str()) }, ["server_label"]),
      allowed_tools: object({ mode: oneOf(["auto", "required"]), tools: arrayOf(anyObject) }, ["mode", "tools"])
    })
  ]
])

const textFormat = byType(
  {
    text: object({}),
    json_object: object({}),
    json_schema: object({ name: str({ min: 1, max: 64 }), schema: anyObject, strict: nullable(bool) }, [
      "name",
      "schema"
    ])
  },
  { known: true }
)

export const INCLUDE_VALUES = [
  "file_search_call.results",
  "web_search_call.results",
  "web_search_call.action.sources",
  "message.input_image.image_url",
  "computer_call_output.output.image_url",
  "code_interpreter_call.outputs",
  "reasoning.encrypted_content",
  "message.output_text.logprobs"
]

const conversation = either("a conversation id or an object with its id", [
  [isString, id],
  [isRecord, object({ id }, ["id"])]
])

/** Every field of `POST /v1/responses` the gateway reads or forwards; others pass as they are. */
export const createResponseFields: Readonly<Record<string, Check>> = {
  model: str({ min: 1, max: 256 }),
  input: either("a string or an array of input items", [
    [isString, str()],
    [isArray, arrayOf(boundedItem)]
  ]),
  instructions: nullable(str()),
  previous_response_id: nullable(id),
  conversation: nullable(conversation),
  background: nullable(bool),
  stream: nullable(bool),
  store: nullable(bool),
  parallel_tool_calls: nullable(bool),
  max_output_tokens: nullable(int(16)),
  max_tool_calls: nullable(int(1)),
  metadata,
  temperature: nullable(num(0, 2)),
  top_p: nullable(num(0, 1)),
  top_logprobs: int(0, 20),
  truncation: nullable(oneOf(["auto", "disabled"])),
  service_tier: nullable(oneOf(["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"])),
  reasoning: nullable(
    object({
      effort: nullable(oneOf(["none", "minimal", "low", "medium", "high", "xhigh", "max"])),
      summary: nullable(oneOf(["auto", "concise", "detailed"])),
      generate_summary: nullable(oneOf(["auto", "concise", "detailed"]))
    })
  ),
  text: object({ format: textFormat, verbosity: nullable(oneOf(["low", "medium", "high"])) }),
  tools: arrayOf(tool),
  tool_choice: toolChoice,
  include: nullable(arrayOf(oneOf(INCLUDE_VALUES))),
  stream_options: nullable(object({ include_obfuscation: bool })),
  prompt: nullable(object({ id: str(), version: nullable(str()), variables: nullable(anyObject) }, ["id"])),
  prompt_cache_key: nullable(str({ max: 256 })),
  prompt_cache_retention: nullable(oneOf(["in_memory", "24h"])),
  safety_identifier: nullable(str({ max: 64 })),
  user: str({ max: 256 })
}

/** `POST /v1/responses` (`model` required) or `POST /v1/responses/input_tokens` (`model` optional). */
const creating = object(createResponseFields, ["model"])
const counting = object(createResponseFields)
export const createResponse = (forCounting: boolean): Check => (forCounting ? counting : creating)

/**
 * What `POST /v1/responses` (or, `counting`, its `input_tokens`) refuses before anything else: the fields against
 * OpenAI's `CreateResponse`, and a missing `input`. A batch line of the Responses endpoint is checked with it too.
 */
export const responsesBodyProblem = (
  body: Readonly<Record<string, unknown>>,
  counting: boolean
): FieldProblem | undefined => {
  const found = createResponse(counting)(body, "")
  if (found !== undefined) return found
  if ((body.input === undefined || body.input === null) && (!counting || body.previous_response_id === undefined)) {
    return { param: "input", message: "input: Missing required parameter: 'input'." }
  }
  return undefined
}

/** `POST /v1/conversations`. */
export const createConversation: Check = object({ items: nullable(arrayOf(boundedItem, { max: 20 })), metadata })

/** `POST /v1/conversations/{id}/items`. */
export const createConversationItems: Check = object({ items: arrayOf(boundedItem, { max: 20 }) }, ["items"])

/** `POST /v1/conversations/{id}`. */
export const updateConversation: Check = object({ metadata }, ["metadata"])
