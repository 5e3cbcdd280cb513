/**
 * Plain-text tables and label/value blocks for terminal output: columns padded to the widest cell (by display width,
 * so wide characters line up), two spaces apart, no trailing blanks, amounts right-aligned.
 */
import { CliOutput } from "effect/cli"

export interface Column<Row> {
  readonly header: string
  readonly align?: "left" | "right"
  readonly cell: (row: Row) => string
}

const pad = (text: string, width: number, align: "left" | "right") => {
  const fill = " ".repeat(Math.max(0, width - CliOutput.displayWidth(text)))
  return align === "right" ? fill + text : text + fill
}

const joinCells = (cells: ReadonlyArray<string>) => cells.join("  ").trimEnd()

export const renderTable = <Row>(columns: ReadonlyArray<Column<Row>>, rows: ReadonlyArray<Row>): string => {
  const body = rows.map((row) => columns.map((column) => column.cell(row)))
  const widths = columns.map((column, index) =>
    Math.max(CliOutput.displayWidth(column.header), ...body.map((cells) => CliOutput.displayWidth(cells[index])))
  )
  const line = (cells: ReadonlyArray<string>) =>
    joinCells(cells.map((cell, index) => pad(cell, widths[index], columns[index].align ?? "left")))
  return [line(columns.map((column) => column.header)), ...body.map(line)].join("\n")
}

export const renderFields = (fields: ReadonlyArray<readonly [label: string, value: string]>): string => {
  const width = Math.max(0, ...fields.map(([label]) => CliOutput.displayWidth(label)))
  return fields.map(([label, value]) => joinCells([pad(label, width, "left"), value])).join("\n")
}
