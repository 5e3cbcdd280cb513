/**
 * A Responses client's `namespace` tools (a group of function tools, each called as `{namespace, name}`) as the plain
 * function tools every other upstream knows: each member gets one flat name, worked out from the request's whole tool
 * list, so that the request's calls (history) are flattened and the reply's calls mapped back the same way.
 *
 * A flat name is `<namespace>__<name>` when that is a valid function name everywhere (letters, digits, `_` and `-`,
 * starting with a letter or `_`, at most 64 characters: the narrowest of OpenAI's, Anthropic's and Gemini's rules);
 * otherwise the same made valid and shortened, with a hash of the pair. A name already taken (a plain tool's, or an
 * earlier member's) gets a `_2`, `_3`, … suffix, so no two tools ever share a flat name.
 */
import { asArray, asRecord, asString, fnv1a } from "./json.ts"

export interface NamespacedName {
  readonly namespace: string
  readonly name: string
}

export interface ToolNames {
  /** The flat name a namespace's member goes upstream under. */
  readonly flat: (namespace: string, name: string) => string
  /** The member a flat name stands for; undefined for a plain tool's name. */
  readonly namespaced: (flat: string) => NamespacedName | undefined
}

const MAX = 64
const VALID = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/

const baseName = (namespace: string, name: string): string => {
  const joined = `${namespace}__${name}`
  if (VALID.test(joined)) return joined
  const cleaned = joined.replace(/[^a-zA-Z0-9_-]/g, "_")
  const started = /^[a-zA-Z_]/.test(cleaned) ? cleaned : `_${cleaned}`
  return `${started.slice(0, MAX - 9)}_${fnv1a(`${namespace}\u0000${name}`)}`
}

const unused = (base: string, taken: ReadonlySet<string>): string => {
  let candidate = base
  for (let k = 2; taken.has(candidate); k++) candidate = `${base.slice(0, MAX - `_${k}`.length)}_${k}`
  return candidate
}

const key = (namespace: string, name: string) => JSON.stringify([namespace, name])

/** The tool names of a Responses request's `tools`: plain function (and custom) tools keep theirs. */
export const toolNamesOf = (tools: unknown): ToolNames => {
  const list = asArray(tools).map(asRecord)
  const taken = new Set<string>()
  for (const tool of list) {
    const name = asString(tool.name)
    if (tool.type !== "namespace" && name !== undefined) taken.add(name)
  }
  const flatOf = new Map<string, string>()
  const memberOf = new Map<string, NamespacedName>()
  for (const tool of list) {
    const namespace = asString(tool.name)
    if (tool.type !== "namespace" || namespace === undefined) continue
    for (const member of asArray(tool.tools).map(asRecord)) {
      const name = asString(member.name)
      if (name === undefined || flatOf.has(key(namespace, name))) continue
      const flat = unused(baseName(namespace, name), taken)
      taken.add(flat)
      flatOf.set(key(namespace, name), flat)
      memberOf.set(flat, { namespace, name })
    }
  }
  return {
    // A member the tool list no longer offers (a call in the history) is named by the same rule.
    flat: (namespace, name) => flatOf.get(key(namespace, name)) ?? unused(baseName(namespace, name), taken),
    namespaced: (flat) => memberOf.get(flat)
  }
}
