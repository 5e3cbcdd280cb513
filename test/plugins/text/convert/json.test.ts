import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { swapSoleModel } from "../../../../src/plugins/text/convert/json.ts"

/** A chunk-like object with a top-level `model`, and other fields that may hold `model` keys and "model" strings. */
const chunk = fc.record({
  id: fc.string(),
  model: fc.oneof(fc.string(), fc.constant("model"), fc.constant('mo"del')),
  choices: fc.array(
    fc.record({
      delta: fc.record({ content: fc.oneof(fc.string(), fc.constant("model"), fc.constant('"model":"x"')) }),
      extra: fc.option(fc.record({ model: fc.string() }), { nil: undefined })
    }),
    { maxLength: 3 }
  ),
  note: fc.option(fc.jsonValue(), { nil: undefined })
})

describe("swapSoleModel", () => {
  it("when it answers, gives exactly the value re-serialized with the new model", () =>
    fc.assert(
      fc.property(chunk, fc.string(), fc.boolean(), (value, to, pretty) => {
        const raw = pretty ? JSON.stringify(value, null, 1) : JSON.stringify(value)
        const swapped = swapSoleModel(raw, value.model, to)
        if (swapped !== undefined)
          assert.deepStrictEqual(JSON.parse(swapped), JSON.parse(JSON.stringify({ ...value, model: to })))
      }),
      { numRuns: 500 }
    ))

  it("answers for compact JSON whose only `model` is the top-level one", () =>
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (content, from, to) => {
        fc.pre(!JSON.stringify(content).includes('"model"'))
        const raw = JSON.stringify({ id: "c1", model: from, choices: [{ delta: { content } }] })
        assert.strictEqual(
          swapSoleModel(raw, from, to),
          JSON.stringify({ id: "c1", model: to, choices: [{ delta: { content } }] })
        )
      })
    ))

  it("declines when the text is ambiguous or not compact", () => {
    assert.isUndefined(swapSoleModel('{"model":"a","x":{"model":"a"}}', "a", "b"))
    assert.isUndefined(swapSoleModel('{"model":"a","role":"model"}', "a", "b"))
    assert.isUndefined(swapSoleModel('{"model": "a"}', "a", "b"))
    assert.isUndefined(swapSoleModel('{"model":"ab"}', "a", "b"))
    // The only `"model"` starts with an escaped quote: it ends the key `x"model`, and the real key is spelled escaped.
    assert.isUndefined(swapSoleModel('{"mod\\u0065l":"a","x\\"model":"a"}', "a", "b"))
    assert.strictEqual(swapSoleModel('{"p":"\\\\","model":"a"}', "a", "b"), '{"p":"\\\\","model":"b"}')
    assert.strictEqual(
      swapSoleModel('{"type":"message_start","message":{"model":"a"}}', "a", "b"),
      '{"type":"message_start","message":{"model":"b"}}'
    )
  })
})
