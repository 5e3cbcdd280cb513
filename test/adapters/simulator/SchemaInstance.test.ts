import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { instanceOf } from "../../../src/adapters/simulator/SchemaInstance.ts"

import { assertMatchesSchema as check } from "./SchemaCheck.ts"

const PATTERNS = [
  "^[A-Z]{3}-\\d{2,4}$",
  "^[a-z]+@[a-z]+\\.com$",
  "^(foo|bar)_[0-9]?$",
  "^\\w{2,5}$",
  "[0-9a-f]{8}",
  "^(?:\\+33|0)[1-9](\\d{2}){4}$",
  "^[^\\s]{3,}$"
]
const FORMATS = ["date-time", "date", "time", "email", "uri", "uuid", "ipv4", "hostname"]

const stringSchema = fc.oneof(
  fc.constant({ type: "string" }),
  fc
    .record({ min: fc.nat(6), extra: fc.nat(10) })
    .map(({ min, extra }) => ({ type: "string", minLength: min, maxLength: min + extra })),
  fc.constantFrom(...FORMATS).map((format) => ({ type: "string", format })),
  fc.constantFrom(...PATTERNS).map((pattern) => ({ type: "string", pattern }))
)

const integerSchema = fc
  .record({
    lo: fc.integer({ min: -100, max: 100 }),
    step: fc.integer({ min: 1, max: 7 }),
    extra: fc.nat(40),
    exclusive: fc.boolean(),
    multiple: fc.boolean()
  })
  .map(({ lo, step, extra, exclusive, multiple }) => {
    const hi = lo + step + extra
    return {
      type: "integer",
      ...(exclusive ? { exclusiveMinimum: lo - 1, exclusiveMaximum: hi + 1 } : { minimum: lo, maximum: hi }),
      ...(multiple ? { multipleOf: step } : {})
    }
  })

const numberSchema = fc
  .record({
    lo: fc.double({ min: -1000, max: 1000, noNaN: true }),
    width: fc.double({ min: 2.5, max: 500, noNaN: true }),
    exclusive: fc.boolean(),
    step: fc.constantFrom(undefined, 0.5, 0.25, 2),
    bounded: fc.constantFrom("both", "min", "max", "none")
  })
  .map(({ lo, width, exclusive, step, bounded }) => ({
    type: "number",
    ...(bounded === "both" || bounded === "min" ? { [exclusive ? "exclusiveMinimum" : "minimum"]: lo } : {}),
    ...(bounded === "both" || bounded === "max" ? { [exclusive ? "exclusiveMaximum" : "maximum"]: lo + width } : {}),
    ...(step === undefined ? {} : { multipleOf: step })
  }))

const leaf = fc.oneof(
  stringSchema,
  integerSchema,
  numberSchema,
  fc.constant({ type: "boolean" }),
  fc.constant({ type: "null" }),
  fc
    .array(fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)), { minLength: 1 })
    .map((e) => ({ enum: e })),
  fc.jsonValue().map((value) => ({ const: value })),
  stringSchema.map((schema) => ({ ...schema, type: ["string", "null"] }))
)

const NAME = fc.constantFrom("city", "name", "count", "tags", "when", "a", "b", "nested", "value", "id")

const { schema } = fc.letrec<{ schema: object; object: object }>((tie) => ({
  schema: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    tie("object"),
    fc
      .record({ items: tie("schema"), min: fc.nat(3), extra: fc.nat(3) })
      .map(({ items, min, extra }) => ({ type: "array", items, minItems: min, maxItems: min + extra })),
    fc.array(tie("schema"), { minLength: 1, maxLength: 3 }).map((anyOf) => ({ anyOf })),
    fc.tuple(tie("object"), tie("object")).map(([a, b]) => ({
      oneOf: [
        { ...a, properties: { ...(a as { properties: object }).properties, kind: { const: "a" } }, required: ["kind"] },
        { ...b, properties: { ...(b as { properties: object }).properties, kind: { const: "b" } }, required: ["kind"] }
      ]
    })),
    fc.tuple(tie("object"), tie("object")).map(([a, b]) => ({
      allOf: [
        { type: "object", properties: (a as { properties: object }).properties },
        {
          properties: Object.fromEntries(
            Object.entries((b as { properties: object }).properties).map(([k, v]) => [`${k}2`, v])
          )
        }
      ]
    })),
    fc.constant({ $ref: "#/$defs/shared" })
  ),
  object: fc
    .record({
      properties: fc.dictionary(NAME, tie("schema"), { minKeys: 1, maxKeys: 4 }),
      closed: fc.boolean(),
      requireAll: fc.boolean()
    })
    .map(({ properties, closed, requireAll }) => ({
      type: "object",
      properties,
      ...(requireAll ? { required: Object.keys(properties) } : {}),
      ...(closed ? { additionalProperties: false } : {})
    }))
}))

/** A schema whose `$defs` hold a shared definition that its nested `$ref`s point at. */
const rootSchema = fc
  .tuple(
    schema.filter((shared) => !JSON.stringify(shared).includes("$ref")),
    schema
  )
  .map(([shared, body]) => ({ $defs: { shared }, ...body }))

describe("instanceOf", () => {
  it("generates a value every random schema of the supported subset accepts", () => {
    fc.assert(
      fc.property(rootSchema, fc.string(), fc.constantFrom("all" as const, "required" as const), (s, seed, fill) => {
        check(s, instanceOf(s, { seed, fill }))
      }),
      { numRuns: 150 }
    )
  })

  it("is deterministic for a seed and varies with it", () => {
    const s = {
      type: "object",
      properties: { pick: { enum: ["a", "b", "c", "d", "e", "f", "g", "h"] }, n: { type: "integer" } }
    }
    assert.deepStrictEqual(instanceOf(s, { seed: "one", fill: "all" }), instanceOf(s, { seed: "one", fill: "all" }))
    const seen = new Set(
      Array.from({ length: 20 }, (_, i) => JSON.stringify(instanceOf(s, { seed: `${i}`, fill: "all" })))
    )
    assert.isAbove(seen.size, 1)
  })

  it("fills every property in strict mode, only the required ones for tools", () => {
    const s = { type: "object", properties: { a: { type: "string" }, b: { type: "integer" } }, required: ["a"] }
    assert.deepStrictEqual(Object.keys(instanceOf(s, { seed: "", fill: "all" }) as object), ["a", "b"])
    assert.deepStrictEqual(Object.keys(instanceOf(s, { seed: "", fill: "required" }) as object), ["a"])
  })

  it("ends recursive $refs (trees, linked lists) within the depth bound", () => {
    const tree = {
      $defs: {
        node: {
          type: "object",
          properties: { label: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/node" } } },
          required: ["label", "children"],
          additionalProperties: false
        }
      },
      $ref: "#/$defs/node"
    }
    const list = {
      definitions: {
        cell: {
          type: "object",
          properties: {
            value: { type: "integer" },
            next: { anyOf: [{ $ref: "#/definitions/cell" }, { type: "null" }] }
          },
          required: ["value", "next"]
        }
      },
      $ref: "#/definitions/cell"
    }
    const root = {
      type: "object",
      properties: { name: { type: "string" }, sub: { $ref: "#" } },
      required: ["name"]
    }
    for (const seed of ["a", "b", "c", "d"]) {
      check(tree, instanceOf(tree, { seed, fill: "all" }))
      check(list, instanceOf(list, { seed, fill: "all" }))
      check(
        { ...root, properties: { ...root.properties, sub: { anyOf: [{ $ref: "#" }, { type: "null" }] } } },
        instanceOf(
          { ...root, properties: { ...root.properties, sub: { anyOf: [{ $ref: "#" }, { type: "null" }] } } },
          { seed, fill: "all" }
        )
      )
    }
  })

  it("reads Gemini's OpenAPI schemas: upper-case types, nullable, format enum, propertyOrdering", () => {
    const gemini = {
      type: "OBJECT",
      properties: {
        title: { type: "STRING" },
        rating: { type: "INTEGER", minimum: 1, maximum: 5 },
        genre: { type: "STRING", format: "enum", enum: ["drama", "comedy"] },
        note: { type: "STRING", nullable: true },
        tags: { type: "ARRAY", items: { type: "STRING" }, minItems: 1 }
      },
      required: ["title", "rating"],
      propertyOrdering: ["rating", "title"]
    }
    const value = instanceOf(gemini, { seed: "x", fill: "all" }) as Record<string, unknown>
    assert.deepStrictEqual(Object.keys(value), ["rating", "title", "genre", "note", "tags"])
    check(
      {
        type: "object",
        properties: {
          title: { type: "string" },
          rating: { type: "integer", minimum: 1, maximum: 5 },
          genre: { enum: ["drama", "comedy"] },
          note: { type: ["string", "null"] },
          tags: { type: "array", items: { type: "string" }, minItems: 1 }
        },
        required: ["title", "rating", "genre", "note", "tags"]
      },
      value
    )
  })

  it("honours uniqueItems, prefixItems and draft-4 exclusive bounds", () => {
    const s = {
      type: "object",
      properties: {
        set: { type: "array", items: { type: "integer", minimum: 0, maximum: 3 }, minItems: 3, uniqueItems: true },
        pair: { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false, minItems: 2 },
        share: { type: "number", minimum: 0, maximum: 1, exclusiveMaximum: 1 }
      }
    }
    for (const seed of ["1", "2", "3"]) check(s, instanceOf(s, { seed, fill: "all" }))
    const draft4 = instanceOf(
      { type: "integer", minimum: 0, maximum: 1, exclusiveMaximum: true },
      { seed: "", fill: "all" }
    )
    assert.strictEqual(draft4, 0)
  })
})
