/** JSON Schema 2020-12 validation (Ajv, with formats) for asserting that simulated output matches its schema. */
import { assert } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"

const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats.default(ajv)

/** Fails with the value, the schema and Ajv's reasons unless `value` validates against `schema`. */
export const assertMatchesSchema = (schema: object | boolean, value: unknown): void => {
  const validate = ajv.compile(schema)
  if (!validate(value)) {
    assert.fail(`${JSON.stringify(value)} does not match ${JSON.stringify(schema)}: ${ajv.errorsText(validate.errors)}`)
  }
}
