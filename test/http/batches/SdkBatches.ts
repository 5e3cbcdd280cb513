/**
 * Batch files and batches through the official `openai` SDK, as the batch suites submit them and wait for them (the
 * raw-fetch twins, for suites that run without the SDK, are in BatchChecks.ts).
 */
import type OpenAI from "openai"
import { toFile } from "openai"

/** A batch input file's text: one request a line. */
export const jsonl = (lines: ReadonlyArray<unknown>) => `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`

/** `lines` uploaded as a batch input file (`in.jsonl`) and submitted on `endpoint`, in a 24 h window. */
export const submitBatch = async (
  openai: OpenAI,
  lines: ReadonlyArray<unknown>,
  endpoint: "/v1/chat/completions" | "/v1/embeddings" | "/v1/responses" = "/v1/chat/completions"
) => {
  const file = await openai.files.create({
    file: await toFile(Buffer.from(jsonl(lines)), "in.jsonl"),
    purpose: "batch"
  })
  return openai.batches.create({ input_file_id: file.id, endpoint, completion_window: "24h" })
}

/** The batch once `done` holds of its status, read every `everyMs`; it fails after `reads` reads without. */
export const batchWhen = async (
  openai: OpenAI,
  id: string,
  done: (status: string) => boolean,
  { everyMs = 100, reads = 300 }: { readonly everyMs?: number; readonly reads?: number } = {}
) => {
  for (let i = 0; i < reads; i++) {
    const batch = await openai.batches.retrieve(id)
    if (done(batch.status)) return batch
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
  throw new Error(`batch ${id} did not reach the awaited status in ${reads} reads`)
}

/** A batch output, error or results file's lines, parsed. */
export const fileLines = async (openai: OpenAI, fileId: string) =>
  (await (await openai.files.content(fileId)).text())
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line))

/** What `key`'s requests cost, as `GET /v1/usage/requests` lists them (one page of 1,000). */
export const usageRows = async (gatewayUrl: string, key: string) =>
  (
    (await (
      await fetch(`${gatewayUrl}/v1/usage/requests?limit=1000`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as { data: ReadonlyArray<{ requestId: string; cost: string; status: string; model: string }> }
  ).data
