/**
 * With an OTLP endpoint configured, a request's spans reach the collector: a fake collector on loopback takes the
 * OTLP/HTTP JSON export and the test finds the gateway's own spans (the chat pipeline, the upstream call) under one
 * trace, with the service name as the resource.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { makeAdmin } from "../../http/chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"

interface ExportedSpan {
  readonly traceId: string
  readonly name: string
}

let collector: Server
let gateway: TestGateway
const exports: Array<{ path: string; body: Record<string, unknown> }> = []

beforeAll(async () => {
  collector = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      exports.push({ path: request.url ?? "", body: JSON.parse(Buffer.concat(chunks).toString("utf8")) })
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
  const port = (collector.address() as AddressInfo).port
  gateway = await startTestGateway({
    video: { enabled: false },
    tracing: { endpoint: `http://127.0.0.1:${port}`, exportIntervalMs: 100 }
  })
}, 60_000)
afterAll(async () => {
  await gateway?.close()
  await new Promise((resolve) => collector?.close(resolve))
})

const spansOf = (): ReadonlyArray<ExportedSpan & { service: string }> =>
  exports.flatMap(({ body }) =>
    ((body.resourceSpans ?? []) as Array<Record<string, unknown>>).flatMap((resource) => {
      const attributes = ((resource.resource as Record<string, unknown>)?.attributes ?? []) as Array<{
        key: string
        value: { stringValue?: string }
      }>
      const service = attributes.find((a) => a.key === "service.name")?.value.stringValue ?? ""
      return ((resource.scopeSpans ?? []) as Array<{ spans: Array<ExportedSpan> }>).flatMap((scope) =>
        scope.spans.map((span) => ({ ...span, service }))
      )
    })
  )

describe("OTLP tracing", () => {
  it("exports the pipeline's spans of one request under one trace", { timeout: 30_000 }, async () => {
    const customer = await makeAdmin(gateway).customer({ deposit: "1" })
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-openai", messages: [{ role: "user", content: "Hi" }], max_tokens: 8 })
    })
    assert.strictEqual(answer.status, 200)
    await answer.text()
    let upstream: (ExportedSpan & { service: string }) | undefined
    for (let i = 0; i < 100 && upstream === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      upstream = spansOf().find((span) => span.name === "UpstreamClient.request")
    }
    assert.isDefined(
      upstream,
      `spans seen: ${spansOf()
        .map((s) => s.name)
        .join(", ")}`
    )
    assert.strictEqual(upstream?.service, "tollgate")
    assert.isTrue(exports.every((e) => e.path === "/v1/traces"))
    const sameTrace = spansOf()
      .filter((span) => span.traceId === upstream?.traceId)
      .map((span) => span.name)
    assert.isAbove(sameTrace.length, 1, `spans of the trace: ${sameTrace.join(", ")}`)
    // No secret reaches the collector.
    const exported = JSON.stringify(exports)
    assert.notInclude(exported, customer.key)
    assert.notInclude(exported, gateway.adminToken)
  })
})
