/**
 * The limits every request is held to at the edge, whatever the endpoint (docs/limits.md lists them with their
 * reasons): how deeply a JSON value may nest, and that text bound for storage holds no NUL and no unpaired surrogate
 * (Postgres refuses both, and one refused command fails the whole group-commit batch it travels in). Each refusal is
 * a 400 naming the field (`metadata.images[0]: must not contain …`), in the envelope of the protocol called.
 *
 * A JSON body is walked once, iteratively (a body nested 5,000 deep must not overflow the stack here either): depth
 * always, every string and key too when the body is stored. Prompt text that is only forwarded upstream is not
 * checked — a NUL is valid in a chat message and vendors accept it — so the chat hot path pays for one pass over the
 * containers, not over the characters.
 */
import { Effect, Result } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { storableTextProblem } from "../domain/StorableText.ts"
import { type ApiError, badRequest } from "./ApiError.ts"

/**
 * Deepest nesting of objects and arrays in a JSON value (the body itself is level 1). Real traffic stays far below:
 * a tool's JSON schema nested ten objects deep is about 25 levels of the request. Past it, code that recurses over
 * the value (serializers, converters) would come near the stack's end.
 */
export const MAX_JSON_DEPTH = 128

/** Longest query parameter value (and name) or path parameter, in UTF-16 code units. */
export const MAX_PARAMETER_CHARS = 1024

/** A field's path as the client wrote it: `models[3].pricing.input`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (text, segment) =>
      typeof segment === "number"
        ? `${text}[${segment}]`
        : text === ""
          ? String(segment)
          : `${text}.${String(segment)}`,
    ""
  )

const nestingMessage = `nested more than ${MAX_JSON_DEPTH} levels deep (objects and arrays); flatten the value`

/** A path cut short for a message: a 128-level path or a 10 kB key must not come back whole. */
const shownPath = (path: string): string => (path.length > 200 ? `${path.slice(0, 197)}...` : path)

export interface JsonProblem {
  /** The offending field (`""` for the value itself). */
  readonly path: string
  readonly message: string
  readonly code: "nesting_too_deep" | "invalid_text"
}

export interface JsonChecks {
  /** Every string and object key must be storable (no NUL, no unpaired surrogate). */
  readonly storable: boolean
  /** Where the value sits in the request, for the path of a problem (`["metadata"]` for a parsed JSON field). */
  readonly prefix?: ReadonlyArray<PropertyKey>
}

/**
 * The first problem of a parsed JSON value, or undefined: one iterative pass with an explicit stack of containers,
 * their keys and the position reached in each (so the path of a problem is read off the stack, never built for a
 * value that passes).
 */
export const jsonProblem = (root: unknown, checks: JsonChecks): JsonProblem | undefined => {
  const prefix = checks.prefix ?? []
  if (typeof root === "string") {
    const problem = checks.storable ? storableTextProblem(root) : undefined
    return problem === undefined
      ? undefined
      : { path: shownPath(formatPath(prefix)), message: problem, code: "invalid_text" }
  }
  if (typeof root !== "object" || root === null) return undefined
  const containers: Array<object> = [root]
  const keyLists: Array<ReadonlyArray<string> | undefined> = [Array.isArray(root) ? undefined : Object.keys(root)]
  const positions: Array<number> = [0]
  const pathHere = (): string => {
    const segments: Array<PropertyKey> = [...prefix]
    for (let level = 0; level < containers.length; level++) {
      const keys = keyLists[level]
      const index = positions[level] - 1
      segments.push(keys === undefined ? index : keys[index])
    }
    return shownPath(formatPath(segments))
  }
  if (prefix.length + 1 > MAX_JSON_DEPTH) {
    return { path: shownPath(formatPath(prefix)), message: nestingMessage, code: "nesting_too_deep" }
  }
  while (containers.length > 0) {
    const top = containers.length - 1
    const node = containers[top]
    const keys = keyLists[top]
    const index = positions[top]
    if (index >= (keys === undefined ? (node as ReadonlyArray<unknown>).length : keys.length)) {
      containers.pop()
      keyLists.pop()
      positions.pop()
      continue
    }
    positions[top] = index + 1
    let child: unknown
    if (keys === undefined) child = (node as ReadonlyArray<unknown>)[index]
    else {
      const key = keys[index]
      if (checks.storable) {
        const problem = storableTextProblem(key)
        if (problem !== undefined) return { path: pathHere(), message: `(a key) ${problem}`, code: "invalid_text" }
      }
      child = (node as Record<string, unknown>)[key]
    }
    if (typeof child === "string") {
      if (checks.storable) {
        const problem = storableTextProblem(child)
        if (problem !== undefined) return { path: pathHere(), message: problem, code: "invalid_text" }
      }
    } else if (typeof child === "object" && child !== null) {
      if (prefix.length + containers.length + 1 > MAX_JSON_DEPTH) {
        return { path: pathHere(), message: nestingMessage, code: "nesting_too_deep" }
      }
      containers.push(child)
      keyLists.push(Array.isArray(child) ? undefined : Object.keys(child))
      positions.push(0)
    }
  }
  return undefined
}

/** A JSON problem as the 400 the client sees. */
export const jsonProblemError = (problem: JsonProblem): ApiError =>
  badRequest(
    problem.path === "" ? `the request body ${problem.message}` : `${problem.path}: ${problem.message}`,
    problem.path === "" ? null : problem.path,
    problem.code
  )

/** Checks a parsed JSON value, failing with the 400 of its first problem. */
export const checkJson = (value: unknown, checks: JsonChecks): Effect.Effect<void, ApiError> => {
  const problem = jsonProblem(value, checks)
  return problem === undefined ? Effect.void : Effect.fail(jsonProblemError(problem))
}

/** One parameter's text: storable and within `MAX_PARAMETER_CHARS`. */
export const parameterProblem = (text: string): string | undefined =>
  text.length > MAX_PARAMETER_CHARS
    ? `must be at most ${MAX_PARAMETER_CHARS} characters, got ${text.length}`
    : storableTextProblem(text)

const invalidParameter = (name: string, problem: string) =>
  badRequest(`${shownPath(name)}: ${problem}`, shownPath(name), "invalid_parameter")

const decoded = (component: string): string | undefined =>
  Result.getOrUndefined(Result.try(() => decodeURIComponent(component.replaceAll("+", " "))))

/**
 * A query string's parameters, each name and value checked. A percent-encoding that is not UTF-8 (`%ED%A0%80`, a
 * lone surrogate's bytes) is refused here: `URLSearchParams` would quietly turn it into U+FFFD.
 */
const queryProblem = (query: string): ApiError | undefined => {
  if (query.includes("%")) {
    for (const pair of query.split("&")) {
      const cut = pair.indexOf("=")
      const name = cut === -1 ? pair : pair.slice(0, cut)
      if (decoded(pair) === undefined) {
        return invalidParameter(decoded(name) ?? "query", "is not valid percent-encoded UTF-8")
      }
    }
  }
  for (const [name, value] of new URLSearchParams(query)) {
    const problem = parameterProblem(name)
    if (problem !== undefined) return invalidParameter("query parameter name", problem)
    const valueProblem = parameterProblem(value)
    if (valueProblem !== undefined) return invalidParameter(name, valueProblem)
  }
  return undefined
}

/**
 * Every path parameter and query parameter of the request, checked before any of them can reach a query: the route's
 * `:params` as the router decoded them (a `*` wildcard is named `path`) and every query parameter, read or not.
 */
export const checkRequestParameters: Effect.Effect<
  void,
  ApiError,
  HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext
> = Effect.gen(function* () {
  const params = yield* HttpRouter.params
  for (const name in params) {
    const value = params[name]
    const problem = value === undefined ? undefined : parameterProblem(value)
    if (problem !== undefined) return yield* invalidParameter(name === "*" ? "path" : name, problem)
  }
  const url = (yield* HttpServerRequest.HttpServerRequest).url
  const start = url.indexOf("?")
  if (start === -1) return
  const end = url.indexOf("#", start)
  const problem = queryProblem(url.slice(start + 1, end === -1 ? undefined : end))
  if (problem !== undefined) return yield* problem
})

/**
 * A list's `limit` query parameter: absent → `fallback`; else decimal digits (no more than `max` has) from 1 to
 * `max`, or a 400 naming the range.
 */
export const limitParam = (params: URLSearchParams, fallback: number, max: number): Effect.Effect<number, ApiError> => {
  const text = params.get("limit")
  if (text === null) return Effect.succeed(fallback)
  const limit = new RegExp(`^\\d{1,${String(max).length}}$`).test(text) ? Number(text) : Number.NaN
  return Number.isInteger(limit) && limit >= 1 && limit <= max
    ? Effect.succeed(limit)
    : Effect.fail(badRequest(`limit: expected an integer from 1 to ${max}`, "limit"))
}
