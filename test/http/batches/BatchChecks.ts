/**
 * What the durability suites (BatchRestart, BatchOutage, the batch case of test/faults/ProcessKill.test.ts) submit and
 * check, over plain HTTP so that they run against in-process and child gateways alike: a batch of chat lines, its end,
 * and its output against the ledger line by line — each line once in the output, in input order; one hold and one
 * settlement per line, at the batch price of the usage the line's output reports; nothing left held.
 */
import { expect } from "vitest"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface LedgerRow {
  readonly type: string
  readonly holdId: string | null
  readonly requestId?: string | null
  readonly data?: Record<string, unknown>
}

const call = async (url: string, key: string, method: string, path: string, body?: BodyInit, type?: string) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(type === undefined ? {} : { "content-type": type }) },
    ...(body === undefined ? {} : { body })
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return text
}

/** Uploads `lines` chat lines for `model` and submits them as a batch; its id and the lines' custom ids. */
export const submitChatBatch = async (url: string, key: string, model: string, lines: number) => {
  const customIds = Array.from({ length: lines }, (_, i) => `line-${i}`)
  const content = customIds
    .map((id, i) =>
      JSON.stringify({
        custom_id: id,
        method: "POST",
        url: "/v1/chat/completions",
        body: { model, messages: [{ role: "user", content: `Line ${i}.` }], max_tokens: 32 }
      })
    )
    .join("\n")
  const form = new FormData()
  form.set("purpose", "batch")
  form.set("file", new Blob([`${content}\n`], { type: "application/jsonl" }), "in.jsonl")
  const file = JSON.parse(await call(url, key, "POST", "/v1/files", form))
  const body = JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })
  const batch = JSON.parse(await call(url, key, "POST", "/v1/batches", body, "application/json"))
  return { batchId: batch.id as string, customIds }
}

export const retrieveBatch = async (url: string, key: string, batchId: string) =>
  JSON.parse(await call(url, key, "GET", `/v1/batches/${batchId}`))

/** Polls until at least `completed` lines have a result. */
export const untilCompleted = async (url: string, key: string, batchId: string, completed: number, ms: number) => {
  for (const until = Date.now() + ms; Date.now() < until; ) {
    const batch = await retrieveBatch(url, key, batchId).catch(() => undefined)
    if ((batch?.request_counts?.completed ?? 0) >= completed) return batch
    await sleep(25)
  }
  throw new Error(`batch ${batchId}: fewer than ${completed} lines completed within ${ms} ms`)
}

/** Polls until the batch has ended; the batch as last read. */
export const untilEnded = async (url: string, key: string, batchId: string, ms: number) => {
  let batch = await retrieveBatch(url, key, batchId).catch(() => undefined)
  for (const until = Date.now() + ms; Date.now() < until && !["completed", "failed"].includes(batch?.status); ) {
    await sleep(50)
    batch = (await retrieveBatch(url, key, batchId).catch(() => undefined)) ?? batch
  }
  return batch
}

/** The output file's lines, parsed. */
export const outputOf = async (url: string, key: string, fileId: string): Promise<ReadonlyArray<OutputLine>> =>
  (await call(url, key, "GET", `/v1/files/${fileId}/content`))
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as OutputLine)

/** A line of a batch's output file (OpenAI's format), as far as these checks read it. */
export interface OutputLine {
  readonly custom_id: string
  readonly response: {
    readonly request_id: string
    readonly status_code: number
    readonly body: { readonly usage: { readonly prompt_tokens: number; readonly completion_tokens: number } }
  }
}

const micros = (decimal: string) => {
  const [whole = "0", fraction = ""] = decimal.replace("-", "").split(".")
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, "0"))
}

const ceilPerMillion = (tokens: number, price: bigint) => (BigInt(tokens) * price + 999_999n) / 1_000_000n

/**
 * Every line answered, once, in input order; each line's request id has exactly one hold and one settlement, whose
 * amount is its usage at `prices` (micro-dollars per 1M tokens); no other hold.
 */
export const assertLineByLine = (
  output: ReadonlyArray<OutputLine>,
  customIds: ReadonlyArray<string>,
  ledger: ReadonlyArray<LedgerRow>,
  prices: { readonly input: bigint; readonly output: bigint }
) => {
  expect(output.map((line) => line.custom_id)).toEqual(customIds)
  const holds = ledger.filter((entry) => entry.type === "HoldPlaced")
  expect(holds).toHaveLength(customIds.length)
  expect(new Set(holds.map((entry) => entry.holdId)).size).toBe(customIds.length)
  for (const line of output) {
    expect(line.response.status_code).toBe(200)
    const own = holds.filter((entry) => entry.requestId === line.response.request_id)
    expect(own, line.custom_id).toHaveLength(1)
    const holdId = own[0]?.holdId
    const settled = ledger.filter((entry) => entry.holdId === holdId && entry.type === "UsageRecalculated")
    const refunded = ledger.filter((entry) => entry.holdId === holdId && entry.type === "RefundIssued")
    expect(settled, line.custom_id).toHaveLength(1)
    // A settlement gives back what it did not capture (`unused`); any other refund would be a release as well.
    expect(
      refunded.filter((entry) => entry.data?.reason !== "unused"),
      line.custom_id
    ).toHaveLength(0)
    expect(refunded.length, line.custom_id).toBeLessThanOrEqual(1)
    const usage = line.response.body.usage
    const expected =
      ceilPerMillion(usage.prompt_tokens, prices.input) + ceilPerMillion(usage.completion_tokens, prices.output)
    expect(micros(String(settled[0]?.data?.captured)), line.custom_id).toBe(expected)
  }
}
