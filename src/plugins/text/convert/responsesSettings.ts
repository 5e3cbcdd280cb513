/** A Responses API request's tools, tool choice and text format in the chat IR (see responsesRequestToIR.ts). */
import { Result } from "effect"
import type { Converted, ResponseFormat, ToolChoice, ToolDefinition } from "./ChatIR.ts"
import { convertError, optionalFlag, toolDefinition } from "./ChatIR.ts"
import { asArray, asRecord, asString, compact, isRecord, type JsonRecord, label } from "./json.ts"
import type { ToolNames } from "./toolNamespaces.ts"

export type Problem = { readonly param: string; readonly message: string }

export const NATIVE = "is only served by a model on an openai-responses upstream"

/** A namespace's function tools under their flat names (toolNamespaces.ts); its custom tools are OpenAI's own. */
const namespaceMembers = (
  tool: JsonRecord,
  at: string,
  names: ToolNames,
  tools: Array<ToolDefinition>,
  nativeOnly: Array<Problem>
): Converted<void> => {
  const namespace = asString(tool.name)
  if (namespace === undefined) return convertError(`${at}.name`, "name must be a string")
  const members = asArray(tool.tools)
  for (let j = 0; j < members.length; j++) {
    const member = asRecord(members[j])
    if (member.type !== "function") {
      nativeOnly.push({ param: `${at}.tools.${j}.type`, message: `a '${label(member.type)}' tool ${NATIVE}` })
      continue
    }
    const definition = toolDefinition(member, `${at}.tools.${j}`)
    if (Result.isFailure(definition)) return Result.fail(definition.failure)
    tools.push({ ...definition.success, name: names.flat(namespace, definition.success.name) })
  }
  return Result.succeed(undefined)
}

export type Hosted = { readonly param: string; readonly type: string }

/**
 * Function tools, and each namespace's function tools under their flat names; every other type (web_search,
 * file_search, mcp, code_interpreter, custom, …) is one the vendor runs or only OpenAI knows: listed in `hosted`.
 */
export const toolsOf = (
  raw: unknown,
  names: ToolNames,
  nativeOnly: Array<Problem>,
  hosted: Array<Hosted>
): Converted<ReadonlyArray<ToolDefinition>> => {
  const tools: Array<ToolDefinition> = []
  const list = asArray(raw)
  for (let i = 0; i < list.length; i++) {
    const tool = asRecord(list[i])
    if (tool.type === "namespace") {
      const members = namespaceMembers(tool, `tools.${i}`, names, tools, nativeOnly)
      if (Result.isFailure(members)) return Result.fail(members.failure)
      continue
    }
    if (typeof tool.type !== "string") return convertError(`tools.${i}.type`, "type must be a string")
    if (tool.type !== "function") {
      hosted.push({ param: `tools.${i}`, type: tool.type })
      continue
    }
    const definition = toolDefinition(tool, `tools.${i}`)
    if (Result.isFailure(definition)) return Result.fail(definition.failure)
    tools.push(definition.success)
  }
  return Result.succeed(tools)
}

export const toolChoiceOf = (
  raw: unknown,
  tools: ReadonlyArray<ToolDefinition>,
  nativeOnly: Array<Problem>
): { readonly toolChoice?: ToolChoice; readonly tools: ReadonlyArray<ToolDefinition> } => {
  if (raw === undefined || raw === null) return { tools }
  if (raw === "auto") return { toolChoice: { type: "auto" }, tools }
  if (raw === "required") return { toolChoice: { type: "any" }, tools }
  if (raw === "none") return { toolChoice: { type: "none" }, tools }
  const choice = asRecord(raw)
  if (choice.type === "function" && typeof choice.name === "string")
    return { toolChoice: { type: "tool", name: choice.name }, tools }
  if (choice.type === "allowed_tools") {
    const names = new Set(
      asArray(choice.tools).flatMap((t) => (typeof asRecord(t).name === "string" ? [asRecord(t).name as string] : []))
    )
    return {
      toolChoice: { type: choice.mode === "required" ? "any" : "auto" },
      tools: tools.filter((t) => names.has(t.name))
    }
  }
  nativeOnly.push({ param: "tool_choice", message: `tool_choice '${label(choice.type)}' ${NATIVE}` })
  return { tools }
}

export const formatOf = (raw: unknown): Converted<ResponseFormat | undefined> => {
  const format = asRecord(asRecord(raw).format)
  switch (format.type) {
    case undefined:
      return Result.succeed(undefined)
    case "text":
      return Result.succeed({ type: "text" })
    case "json_object":
      return Result.succeed({ type: "json_object" })
    case "json_schema": {
      if (!isRecord(format.schema)) return convertError("text.format.schema", "schema must be a JSON schema object")
      const strict = optionalFlag(format.strict, "text.format.strict")
      if (Result.isFailure(strict)) return Result.fail(strict.failure)
      return Result.succeed(
        compact({
          type: "json_schema" as const,
          name: asString(format.name),
          description: asString(format.description),
          schema: format.schema,
          strict: strict.success
        })
      )
    }
    default:
      return convertError("text.format.type", `unsupported text format '${label(format.type)}'`)
  }
}
