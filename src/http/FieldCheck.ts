/**
 * A compact checker of JSON request fields: types, ranges, enums and lengths, the first problem found named by its
 * path (`tools.2.name`) with the bad value quoted at most ~100 characters. The Responses API's request is described
 * with it (dialects/ResponsesRequestSchema.ts); a test checks the description against OpenAI's published schema.
 */

import { quoted } from "../domain/Quoted.ts"

export interface FieldProblem {
  readonly param: string
  readonly message: string
}

/** Checks `value` at `path`; undefined when it is fine. */
export type Check = (value: unknown, path: string) => FieldProblem | undefined

export { quoted }

const kindOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : typeof value

const problem = (path: string, expected: string, value: unknown): FieldProblem => ({
  param: path,
  message: `${path}: expected ${expected}, got ${kindOf(value) === "object" || Array.isArray(value) ? kindOf(value) : quoted(value)}`
})

const missing = (path: string): FieldProblem => ({
  param: path,
  message: `${path}: Missing required parameter: '${path}'.`
})

export const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const str =
  (options: { readonly max?: number; readonly min?: number } = {}): Check =>
  (value, path) => {
    if (typeof value !== "string") return problem(path, "a string", value)
    if (options.max !== undefined && value.length > options.max) {
      return { param: path, message: `${path}: at most ${options.max} characters, got ${value.length}` }
    }
    if (options.min !== undefined && value.length < options.min) {
      return { param: path, message: `${path}: at least ${options.min} characters, got ${value.length}` }
    }
    return undefined
  }

export const num =
  (min: number, max: number, integer = false): Check =>
  (value, path) => {
    const ok =
      typeof value === "number" &&
      Number.isFinite(value) &&
      (!integer || Number.isSafeInteger(value)) &&
      value >= min &&
      value <= max
    if (ok) return undefined
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`
    return problem(path, `${integer ? "an integer" : "a number"} ${range}`, value)
  }

export const int = (min: number, max = Number.MAX_SAFE_INTEGER): Check => num(min, max, true)

export const bool: Check = (value, path) => (typeof value === "boolean" ? undefined : problem(path, "a boolean", value))

export const oneOf =
  (values: ReadonlyArray<string>): Check =>
  (value, path) =>
    typeof value === "string" && values.includes(value)
      ? undefined
      : problem(path, `one of ${values.map((v) => `'${v}'`).join(", ")}`, value)

/** Any JSON object (its fields are someone else's to check). */
export const anyObject: Check = (value, path) => (isRecord(value) ? undefined : problem(path, "an object", value))

export const nullable =
  (check: Check): Check =>
  (value, path) =>
    value === null ? undefined : check(value, path)

/** The first check that accepts the value's JSON kind decides; `expected` says what was wanted otherwise. */
export const either =
  (expected: string, alternatives: ReadonlyArray<readonly [(value: unknown) => boolean, Check]>): Check =>
  (value, path) => {
    for (const [matches, check] of alternatives) if (matches(value)) return check(value, path)
    return problem(path, expected, value)
  }

export const arrayOf =
  (item: Check, options: { readonly max?: number } = {}): Check =>
  (value, path) => {
    if (!Array.isArray(value)) return problem(path, "an array", value)
    if (options.max !== undefined && value.length > options.max) {
      return { param: path, message: `${path}: at most ${options.max} items, got ${value.length}` }
    }
    for (let i = 0; i < value.length; i++) {
      const found = item(value[i], `${path}.${i}`)
      if (found !== undefined) return found
    }
    return undefined
  }

const fieldPath = (path: string, name: string): string => (path === "" ? name : `${path}.${name}`)

/**
 * An object whose listed fields are checked when present (null is a value like any other: wrap in `nullable`) and
 * whose `required` fields must be there. Fields not listed pass as they are.
 */
export const object = (fields: Readonly<Record<string, Check>>, required: ReadonlyArray<string> = []): Check => {
  const entries = Object.entries(fields)
  return (value, path) => {
    if (!isRecord(value)) return problem(path, "an object", value)
    for (const name of required) {
      if (value[name] === undefined) return missing(fieldPath(path, name))
    }
    for (const [name, check] of entries) {
      const field = value[name]
      if (field === undefined) continue
      const found = check(field, fieldPath(path, name))
      if (found !== undefined) return found
    }
    return undefined
  }
}

/** An object told apart by its `type` (absent: `fallback`); a type not listed passes any object. */
export const byType =
  (variants: Readonly<Record<string, Check>>, options: { readonly fallback?: string; readonly known?: boolean } = {}) =>
  (value: unknown, path: string): FieldProblem | undefined => {
    if (!isRecord(value)) return problem(path, "an object", value)
    const type = value.type ?? options.fallback
    if (typeof type !== "string") return problem(`${path}.type`, "a string", type)
    // Own keys only: a type of "__proto__" or "constructor" is a type like any other, not a checker.
    const check = Object.hasOwn(variants, type) ? variants[type] : undefined
    if (check !== undefined) return check(value, path)
    return options.known === true
      ? { param: `${path}.type`, message: `${path}.type: unknown type ${quoted(type)}` }
      : undefined
  }
