import { Option } from "effect"
import { arrayField, field, isRecord, type JsonRecord, numberField, stringField } from "./Json.ts"
import { type Choose, samplePattern } from "./PatternSample.ts"
import {
  BY_FORMAT,
  GIVE_UP_DEPTH,
  MAX_DEPTH,
  PATTERN_ATTEMPTS,
  PLAUSIBLE_BY_NAME,
  WORDS,
  chooser,
  compile,
  impliedType,
  mentionsRef,
  merge,
  typesOf,
  without
} from "./SchemaRules.ts"

export interface InstanceOptions {
  /** Varies the choices between requests; the same seed gives the same value. */
  readonly seed: string
  /**
   * "all": every declared property (strict structured output requires all of them); "required": the required ones,
   * or all when the schema lists none (what a model does with tool arguments).
   */
  readonly fill: "all" | "required"
}

/** Nesting past which every choice goes to the smallest value the schema allows, so recursive `$ref`s end. */
class Generator {
  constructor(
    readonly root: unknown,
    readonly choose: Choose,
    readonly fill: "all" | "required"
  ) {}

  resolve(ref: string): unknown {
    if (!ref.startsWith("#")) return {}
    const steps = ref
      .slice(1)
      .split("/")
      .filter((step) => step.length > 0)
      .map((step) => decodeURIComponent(step).replace(/~1/g, "/").replace(/~0/g, "~"))
    let at: unknown = this.root
    for (const step of steps) at = Array.isArray(at) ? at[Number(step)] : field(at, step)
    return at ?? {}
  }

  value(schema: unknown, name: string, depth: number): unknown {
    // A `$ref` chain that never reaches a value (a definition that is only a reference to itself) stops here.
    if (schema === false || depth > GIVE_UP_DEPTH) return null
    if (!isRecord(schema)) return this.word(name)
    const deep = depth > MAX_DEPTH
    if (typeof schema.$ref === "string") {
      const target = this.resolve(schema.$ref)
      const rest = without(schema, "$ref")
      return this.value(isRecord(target) ? merge(target, rest) : rest, name, depth + 1)
    }
    if ("const" in schema) return schema.const
    const allOf = arrayField(schema, "allOf")
    if (allOf !== undefined) {
      const parts = allOf.map((part) =>
        isRecord(part) && typeof part.$ref === "string" ? this.resolve(part.$ref) : part
      )
      const merged = parts.filter(isRecord).reduce(merge, without(schema, "allOf"))
      return this.value(merged, name, depth + 1)
    }
    for (const key of ["anyOf", "oneOf"] as const) {
      const variants = arrayField(schema, key)
      if (variants === undefined || variants.length === 0) continue
      const index = deep ? this.shallowest(variants) : this.choose(variants.length)
      const variant = variants[index]
      const base = without(schema, key)
      return this.value(isRecord(variant) ? merge(base, variant) : variant, name, depth + 1)
    }
    const choices = arrayField(schema, "enum")
    if (choices !== undefined && choices.length > 0) return choices[deep ? 0 : this.choose(choices.length)]

    const types = typesOf(schema) ?? [impliedType(schema) ?? (depth === 0 ? "object" : "string")]
    const concrete = types.filter((t) => t !== "null")
    if (concrete.length === 0 || (deep && types.includes("null"))) return null
    switch (concrete[this.choose(concrete.length)]) {
      case "object":
        return this.object(schema, depth, deep)
      case "array":
        return this.array(schema, name, depth, deep)
      case "string":
        return this.string(schema, name)
      case "integer":
        return this.number(schema, true)
      case "number":
        return this.number(schema, false)
      case "boolean":
        return this.choose(2) === 0
      default:
        return this.word(name)
    }
  }

  /** The variant least likely to recurse: `null`, then one without a `$ref`, then the first. */
  shallowest(variants: ReadonlyArray<unknown>): number {
    const isNull = variants.findIndex((v) => isRecord(v) && typesOf(v)?.every((t) => t === "null") === true)
    if (isNull >= 0) return isNull
    const plain = variants.findIndex((v) => !mentionsRef(v))
    return Math.max(plain, 0)
  }

  object(schema: JsonRecord, depth: number, deep: boolean): Record<string, unknown> {
    const properties = isRecord(schema.properties) ? schema.properties : {}
    const required = (arrayField(schema, "required") ?? []).filter((key): key is string => typeof key === "string")
    const declared = Object.keys(properties)
    const ordering = (arrayField(schema, "propertyOrdering") ?? []).filter(
      (key): key is string => typeof key === "string"
    )
    const ordered = [
      ...ordering.filter((key) => declared.includes(key)),
      ...declared.filter((k) => !ordering.includes(k))
    ]
    const everything = this.fill === "all" || !Array.isArray(schema.required)
    const chosen = deep ? required : everything ? [...new Set([...ordered, ...required])] : required
    const extra = schema.additionalProperties
    const result: Record<string, unknown> = {}
    for (const key of chosen) {
      result[key] = this.value(key in properties ? properties[key] : isRecord(extra) ? extra : {}, key, depth + 1)
    }
    const minProperties = numberField(schema, "minProperties") ?? 0
    for (let n = 1; Object.keys(result).length < minProperties && n <= minProperties + declared.length; n += 1) {
      const spare = declared.find((key) => !(key in result))
      if (spare !== undefined) result[spare] = this.value(properties[spare], spare, depth + 1)
      else if (extra !== false) result[`extra_${n}`] = this.value(isRecord(extra) ? extra : {}, "", depth + 1)
    }
    const maxProperties = numberField(schema, "maxProperties")
    if (maxProperties !== undefined) {
      for (const key of Object.keys(result)) {
        if (Object.keys(result).length <= maxProperties) break
        if (!required.includes(key)) delete result[key]
      }
    }
    return result
  }

  array(schema: JsonRecord, name: string, depth: number, deep: boolean): Array<unknown> {
    const tuple = arrayField(schema, "prefixItems") ?? arrayField(schema, "items")
    const rest = tuple === undefined ? schema.items : "prefixItems" in schema ? schema.items : schema.additionalItems
    const min = numberField(schema, "minItems") ?? 0
    const max = numberField(schema, "maxItems") ?? Number.POSITIVE_INFINITY
    const wanted = deep ? min : Math.max(min, 1) + this.choose(2)
    const count = Math.max(min, Math.min(max, wanted, rest === false ? (tuple?.length ?? 0) : wanted))
    const unique = schema.uniqueItems === true
    const seen = new Set<string>()
    const result: Array<unknown> = []
    const contains = schema.contains
    for (let attempt = 0; result.length < count && attempt < count * 10 + 10; attempt += 1) {
      const index = result.length
      const itemSchema =
        tuple !== undefined && index < tuple.length
          ? tuple[index]
          : index === 0 && isRecord(contains)
            ? isRecord(rest)
              ? { allOf: [rest, contains] }
              : contains
            : rest
      const item = this.value(itemSchema === undefined || itemSchema === true ? {} : itemSchema, name, depth + 1)
      const key = JSON.stringify(item)
      if (unique && seen.has(key)) continue
      seen.add(key)
      result.push(item)
    }
    return result
  }

  string(schema: JsonRecord, name: string): string {
    const minLength = numberField(schema, "minLength") ?? 0
    const maxLength = numberField(schema, "maxLength") ?? Number.POSITIVE_INFINITY
    const fits = (text: string) => [...text].length >= minLength && [...text].length <= maxLength
    const format = stringField(schema, "format")
    if (format !== undefined && format in BY_FORMAT) return BY_FORMAT[format]!
    const pattern = stringField(schema, "pattern")
    if (pattern !== undefined) {
      const regex = compile(pattern)
      let best: string | undefined
      for (let attempt = 0; attempt < PATTERN_ATTEMPTS; attempt += 1) {
        const sample = samplePattern(pattern, this.choose)
        if (Option.isSome(regex) && !regex.value.test(sample)) continue
        best ??= sample
        if (fits(sample)) return sample
      }
      return best ?? this.sized(pattern.replace(/[^a-zA-Z0-9]/g, ""), minLength, maxLength)
    }
    return this.sized(this.word(name), minLength, maxLength)
  }

  /** A string that reads like what the property holds (by its name), else one of a few words. */
  word(name: string): string {
    const plausible = name === "" ? undefined : PLAUSIBLE_BY_NAME.find(([pattern]) => pattern.test(name))
    return plausible !== undefined ? plausible[1] : WORDS[this.choose(WORDS.length)]!
  }

  sized(text: string, minLength: number, maxLength: number): string {
    const base = text.length === 0 ? "x" : text
    let result = base
    while ([...result].length < minLength) result += ` ${base}`
    return [...result].slice(0, Math.max(minLength, Math.min(maxLength, [...result].length))).join("")
  }

  number(schema: JsonRecord, integer: boolean): number {
    // Draft 4 writes exclusive bounds as booleans beside minimum/maximum; later drafts as numbers.
    const minimum = numberField(schema, "minimum")
    const maximum = numberField(schema, "maximum")
    const exclusiveMin =
      numberField(schema, "exclusiveMinimum") ?? (schema.exclusiveMinimum === true ? minimum : undefined)
    const exclusiveMax =
      numberField(schema, "exclusiveMaximum") ?? (schema.exclusiveMaximum === true ? maximum : undefined)
    const step = numberField(schema, "multipleOf")
    const unit = step !== undefined && step > 0 ? step : integer ? 1 : undefined
    const above = (v: number) =>
      (minimum === undefined || v >= minimum) && (exclusiveMin === undefined || v > exclusiveMin)
    const below = (v: number) =>
      (maximum === undefined || v <= maximum) && (exclusiveMax === undefined || v < exclusiveMax)
    const lower = Math.max(minimum ?? Number.NEGATIVE_INFINITY, exclusiveMin ?? Number.NEGATIVE_INFINITY)
    const upper = Math.min(maximum ?? Number.POSITIVE_INFINITY, exclusiveMax ?? Number.POSITIVE_INFINITY)
    // Without bounds, a small positive value; with one, a value near it; with both, one between them.
    const from = Number.isFinite(lower) ? lower : Number.isFinite(upper) ? Math.min(0, upper - 100) : 0
    const to = Number.isFinite(upper) ? upper : from + 100
    if (unit === undefined) {
      for (let attempt = 0; attempt < 8; attempt += 1) {
        const candidate = Math.round((from + ((to - from) * (1 + this.choose(99))) / 100) * 100) / 100
        if (above(candidate) && below(candidate)) return candidate
      }
      return (from + to) / 2
    }
    const multiple = (v: number) => integer || Number.isInteger(v / unit) || step === undefined
    const first = Math.ceil(from / unit)
    const last = Math.floor(to / unit)
    const span = Math.max(0, Math.min(last - first, 100))
    const offset = this.choose(span + 1)
    for (let k = 0; k <= span; k += 1) {
      const n = first + ((offset + k) % (span + 1))
      const candidate = Number((n * unit).toPrecision(15))
      if (above(candidate) && below(candidate) && (!integer || Number.isInteger(candidate)) && multiple(candidate))
        return candidate
    }
    return integer ? Math.ceil(from) : from
  }
}

/** A value valid against `schema`, the same for the same schema and seed. */
export const instanceOf = (schema: unknown, options: InstanceOptions): unknown =>
  new Generator(schema, chooser(options.seed), options.fill).value(schema, "", 0)
