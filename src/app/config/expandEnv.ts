/**
 * `${VAR}` expansion in every string of a parsed config file, so secrets stay in the environment. `$${` writes a literal
 * `${`. Messages name the path and the variable, never a value.
 */

const REFERENCE = /\$(\$?)\{([^}]*)\}/g
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Marks a string that could not be expanded, so later checks skip it instead of reporting a second problem. */
export const Unresolved: unique symbol = Symbol.for("tollgate/app/config/Unresolved")

export type Unresolved = typeof Unresolved

/** Every variable name the strings of `raw` refer to. */
export const referencedVariables = (raw: unknown): ReadonlySet<string> => {
  const names = new Set<string>()
  walkStrings(raw, (text) => {
    for (const match of text.matchAll(REFERENCE)) {
      if (match[1] === "" && NAME.test(match[2])) names.add(match[2])
    }
  })
  return names
}

/** A copy of `raw` with references replaced; strings that cannot be expanded become {@link Unresolved}. */
export const expandEnv = (
  raw: unknown,
  env: ReadonlyMap<string, string>
): { readonly value: unknown; readonly issues: ReadonlyArray<string> } => {
  const issues: Array<string> = []
  const expand = (value: unknown, path: string): unknown => {
    if (typeof value === "string") return expandString(value, path, env, issues)
    if (Array.isArray(value)) return value.map((item, index) => expand(item, `${path}[${index}]`))
    if (isRecord(value)) {
      const out: Record<string, unknown> = {}
      for (const [key, item] of Object.entries(value)) {
        Object.defineProperty(out, key, {
          value: expand(item, path === "" ? key : `${path}.${key}`),
          enumerable: true,
          writable: true,
          configurable: true
        })
      }
      return out
    }
    return value
  }
  return { value: expand(raw, ""), issues }
}

const expandString = (
  text: string,
  path: string,
  env: ReadonlyMap<string, string>,
  issues: Array<string>
): string | Unresolved => {
  if (!text.includes("${")) return text
  let failed = false
  const expanded = text.replace(REFERENCE, (whole, escaped: string, name: string) => {
    if (escaped === "$") return whole.slice(1)
    if (!NAME.test(name)) {
      issues.push(`${path || "config"}: invalid environment variable reference (expected \${NAME})`)
      failed = true
      return ""
    }
    const value = env.get(name)
    if (value === undefined) {
      issues.push(`${path || "config"}: environment variable ${name} is not set`)
      failed = true
      return ""
    }
    return value
  })
  return failed ? Unresolved : expanded
}

const walkStrings = (value: unknown, visit: (text: string) => void): void => {
  if (typeof value === "string") visit(value)
  else if (Array.isArray(value)) for (const item of value) walkStrings(item, visit)
  else if (isRecord(value)) for (const item of Object.values(value)) walkStrings(item, visit)
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
