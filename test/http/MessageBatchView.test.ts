/**
 * How a message batch's lines read on Anthropic's surface once it ends some other way than completing: an expired or
 * cancelled batch's unrun and cut requests, and a failed batch's unrun ones (the end-to-end suite covers completion).
 */
import { describe, expect, it } from "vitest"
import { type BatchEnding, type BatchEvent, fold, type LineResult } from "../../src/domain/batch/BatchJob.ts"
import { messageBatchObject, messageBatchResults } from "../../src/http/MessageBatchView.ts"

const at = "2026-01-01T00:00:00.000Z"
const batchId = "msgbatch_test"

const finished = (line: number, outcome: LineResult["outcome"]): BatchEvent => ({
  type: "BatchLineFinished",
  data: {
    batchId,
    at,
    line,
    customId: `r${line}`,
    outcome,
    holdId: outcome === "succeeded" ? "h" : null,
    cost: outcome === "succeeded" ? "0.000010" : "0.000000",
    requestId: `${batchId}/${line}`,
    response: outcome === "succeeded" ? { statusCode: 200, body: { type: "message", id: "msg_1" } } : null,
    error: outcome === "succeeded" ? null : { code: "batch_cut", message: "cut" }
  }
})

/** Four requests: r0 answered, r1 cut while running (its hold released), r2 and r3 never run. */
const endedAs = (ending: BatchEnding, message: string | null) =>
  fold([
    {
      type: "BatchSubmitted",
      data: {
        batchId,
        accountId: "a",
        key: { keyId: "k", models: null, spendLimit: null },
        endpoint: "/v1/messages",
        inputFileId: "file-x",
        completionWindow: "24h",
        customIds: ["r0", "r1", "r2", "r3"],
        metadata: null,
        requestId: null,
        expiresAt: "2026-01-02T00:00:00.000Z",
        at
      }
    },
    { type: "BatchStarted", data: { batchId, at } },
    finished(0, "succeeded"),
    ...(ending === "cancelled" ? [{ type: "BatchCancelRequested", data: { batchId, at } } as BatchEvent] : []),
    finished(1, "cancelled"),
    {
      type: "BatchEnded",
      data: { batchId, ending, outputFileId: null, errorFileId: null, message, at: "2026-01-02T00:00:00.000Z" }
    }
  ])

const resultTypes = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line).result.type)

describe("message batch view", () => {
  it("an expired batch: its cut and unrun requests are expired", () => {
    const state = endedAs("expired", "window over")
    if (state === undefined) throw new Error("no state")
    const object = messageBatchObject(state, "http://gw")
    expect(object.processing_status).toBe("ended")
    expect(object.ended_at).toBe("2026-01-02T00:00:00.000Z")
    expect(object.request_counts).toEqual({ processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 3 })
    expect(object.results_url).toBe("http://gw/v1/messages/batches/msgbatch_test/results")
    expect(resultTypes(messageBatchResults(state))).toEqual(["succeeded", "expired", "expired", "expired"])
  })

  it("a cancelled batch: its cut and unrun requests are canceled, and cancel_initiated_at is set", () => {
    const state = endedAs("cancelled", null)
    if (state === undefined) throw new Error("no state")
    const object = messageBatchObject(state, "http://gw")
    expect(object.cancel_initiated_at).toBe(at)
    expect(object.request_counts).toEqual({ processing: 0, succeeded: 1, errored: 0, canceled: 3, expired: 0 })
    expect(resultTypes(messageBatchResults(state))).toEqual(["succeeded", "canceled", "canceled", "canceled"])
  })

  it("a failed batch: its unrun requests are errored with the batch's reason", () => {
    const state = endedAs("failed", "the batch's API key was revoked")
    if (state === undefined) throw new Error("no state")
    expect(messageBatchObject(state, "http://gw").request_counts).toMatchObject({ succeeded: 1, errored: 2 })
    const lines = messageBatchResults(state)
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
    expect(lines[0].result.message).toEqual({ type: "message", id: "msg_1" })
    expect(lines[2].result).toEqual({
      type: "errored",
      error: {
        type: "error",
        error: { type: "api_error", message: "the batch's API key was revoked" },
        request_id: null
      }
    })
  })
})
