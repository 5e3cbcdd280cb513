import { assert, describe, it } from "@effect/vitest"
import { renderFields, renderTable } from "../../src/cli/Table.ts"

describe("renderTable", () => {
  it("pads columns to the widest cell, right-aligns amounts and leaves no trailing blanks", () => {
    const table = renderTable(
      [
        { header: "ID", cell: (row: { id: string; amount: string }) => row.id },
        { header: "AMOUNT", align: "right", cell: (row) => row.amount },
        { header: "NOTE", cell: () => "" }
      ],
      [
        { id: "acc_1", amount: "12.500000" },
        { id: "acc_22", amount: "0.000001" }
      ]
    )
    assert.strictEqual(table, ["ID         AMOUNT  NOTE", "acc_1   12.500000", "acc_22   0.000001"].join("\n"))
  })

  it("measures wide characters by display width", () => {
    const table = renderTable(
      [
        { header: "NAME", cell: (name: string) => name },
        { header: "X", cell: () => "x" }
      ],
      ["日本", "ab"]
    )
    assert.strictEqual(table, ["NAME  X", "日本  x", "ab    x"].join("\n"))
  })
})

describe("renderFields", () => {
  it("aligns values after the longest label", () => {
    assert.strictEqual(
      renderFields([
        ["id", "acc_1"],
        ["available", "1.000000"]
      ]),
      "id         acc_1\navailable  1.000000"
    )
  })
})
