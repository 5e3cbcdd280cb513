/**
 * An alert webhook is refused at creation when its deliveries could never be sent under the guarded fetcher's
 * address rule (loopback, private, link-local, cloud metadata — also hidden in IPv6 forms or behind a metadata host
 * name): a 400 naming `url`, not a 201 and hours of doomed retries. A public address is accepted.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"

let gateway: TestGateway
let admin: Admin
beforeAll(async () => {
  // No allow-list: the address rule as a production gateway applies it.
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
}, 60_000)
afterAll(() => gateway?.close())

const SECRET = "whsec-0123456789abcdef"

describe("alert webhook addresses", () => {
  it("refuses loopback, private, link-local and metadata webhooks at creation, naming the field", async () => {
    const customer = await admin.customer()
    const refused = [
      "http://127.0.0.1:9/hook",
      "http://localhost:9/hook",
      "http://10.1.2.3/hook",
      "http://192.168.0.10/hook",
      "http://169.254.169.254/latest/meta-data",
      "http://metadata.google.internal/computeMetadata/v1",
      "http://[::1]/hook",
      "http://[::ffff:127.0.0.1]/hook",
      "http://[fd00::1]/hook"
    ]
    for (const url of refused) {
      const response = await admin.call("POST", `/admin/accounts/${customer.accountId}/alerts`, {
        url,
        events: ["balance.low"],
        secret: SECRET,
        balanceBelow: "1.00"
      })
      assert.strictEqual(response.status, 400, `${url}: ${JSON.stringify(response.body)}`)
      const error = (response.body as unknown as { error: { param: string; message: string } }).error
      assert.strictEqual(error.param, "url", url)
      assert.match(error.message, /^url: /, url)
    }
    const listed = await admin.call("GET", `/admin/accounts/${customer.accountId}/alerts`)
    assert.deepStrictEqual((listed.body as unknown as { data: Array<unknown> }).data, [])
  })

  it("accepts a webhook on a public address", async () => {
    const customer = await admin.customer()
    const created = await admin.call("POST", `/admin/accounts/${customer.accountId}/alerts`, {
      url: "https://93.184.215.14/hook",
      events: ["balance.low"],
      secret: SECRET,
      balanceBelow: "1.00"
    })
    assert.strictEqual(created.status, 201, JSON.stringify(created.body))
  })
})
