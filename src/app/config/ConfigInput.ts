/** Reads a parsed config file's loosely typed values, recording a path-named issue for each that does not fit. */
import { Unresolved } from "./expandEnv.ts"

export class Input {
  constructor(private readonly issues: Array<string>) {}

  issue(path: string, message: string): void {
    this.issues.push(`${path}: ${message}`)
  }

  push(issue: string): void {
    this.issues.push(issue)
  }

  /** An object; with `keys`, any other key is reported. Absent is an issue only when `required`. */
  object(
    value: unknown,
    path: string,
    keys: ReadonlyArray<string> | undefined,
    required = true
  ): Record<string, unknown> | undefined {
    if (value === undefined || value === null) {
      if (required) this.issue(path, "required")
      return undefined
    }
    if (value === Unresolved) return undefined
    if (typeof value !== "object" || Array.isArray(value)) {
      this.issue(path, "expected an object")
      return undefined
    }
    const record = value as Record<string, unknown>
    if (keys !== undefined) {
      for (const key of Object.keys(record)) {
        if (!keys.includes(key)) this.issue(path === "config" ? key : `${path}.${key}`, "unknown key")
      }
    }
    return record
  }

  list(value: unknown, path: string, required: boolean): ReadonlyArray<unknown> | undefined {
    if (value === undefined || value === null) {
      if (required) this.issue(path, "required")
      return undefined
    }
    if (!Array.isArray(value)) {
      this.issue(path, "expected a list")
      return undefined
    }
    return value
  }

  /** A non-empty string. */
  string(value: unknown, path: string): string | undefined {
    if (value === Unresolved) return undefined
    if (value === undefined || value === null) {
      this.issue(path, "required")
      return undefined
    }
    if (typeof value !== "string" || value.trim() === "") {
      this.issue(path, "expected a non-empty string")
      return undefined
    }
    return value
  }

  /** A positive integer, written as a number or, after `${VAR}` expansion, as digits; `fallback` when absent. */
  positiveInt(value: unknown, path: string, fallback: number): number {
    if (value === undefined || value === null || value === Unresolved) return fallback
    const number = typeof value === "string" && /^[0-9]+$/.test(value) ? Number(value) : value
    if (typeof number !== "number" || !Number.isSafeInteger(number) || number <= 0) {
      this.issue(path, "expected a positive integer")
      return fallback
    }
    return number
  }
}
