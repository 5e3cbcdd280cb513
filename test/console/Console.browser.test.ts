/**
 * The web console end to end in a real browser (Debian's Chromium driven by playwright-core) against a real gateway
 * on PGlite: an operator creates an account, deposits, creates and copies a key; the key holder chats and draws an
 * image in the playground; the charges show in the operator's ledger and chart; a video runs to completion with a
 * progress bar and a player; an upstream is disabled and enabled again from the Upstreams page; the low-balance alert
 * the first charge raised is listed as delivered on the Alerts page and resent to the webhook; the key is revoked
 * and the playground is refused. Then batches: a key holder's on both surfaces (OpenAI's and Anthropic's) with their
 * counts, progress, charge and downloads, one cancelled from the page; every account's for the operator, filtered,
 * a batch's money, one cancelled from its page; each cancel agreed by the API. Skipped, saying so, only when /usr/bin/chromium is absent (`.ci/run` installs it).
 * `TOLLGATE_SCREENSHOTS=1` also writes docs/console-*.png.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { build } from "vite"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const CHROMIUM = "/usr/bin/chromium"
const available = existsSync(CHROMIUM)
if (!available) console.warn(`console browser test skipped: ${CHROMIUM} is absent (apt-get install -y chromium)`)

const root = resolve(import.meta.dirname, "../..")
const shots = process.env.TOLLGATE_SCREENSHOTS === "1" ? join(root, "docs") : undefined

const config = (sim: string, slow: string, hook: string) => `
upstreams:
  slow: { protocol: openai, baseUrl: "${slow}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-gemini: { protocol: gemini, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-ark: { protocol: ark, baseUrl: "${sim}/api/v3", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: imgchat-2.5-flash-image, plugin: chat-image, upstreams: [sim-gemini], upstreamModel: imgchat-2.5-flash-image, pricing: { perCall: "0.039" } }
  - { id: imggen-2, plugin: dedicated-image, upstreams: [sim-openai], upstreamModel: imggen-2, pricing: { input: "5.00", output: "40.00" } }
  - { id: video-model-2.0-fast, plugin: video, upstreams: [sim-ark], upstreamModel: seedance-2-0-fast, pricing: { output: "1.40" } }
  - { id: slow-model, plugin: text, upstreams: [slow], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
video: { pollIntervalMs: 200, deadlineMinutes: 30, retentionDays: 7 }
alerts:
  - { url: "${hook}", events: ["*"], secret: "whsec_console_test_secret_1", balanceBelow: "100.00" }
`

let sim: RunningSimulator
/** Answers after 400 ms: a batch on it runs long enough to be cancelled from a page. */
let slowSim: RunningSimulator
/** The alert webhook: answers 200 and keeps what it was sent. */
let receiver: Server
const received: Array<{ readonly headers: IncomingHttpHeaders; readonly body: string }> = []
let gateway: TestGateway
let context: BrowserContext
let dir: string

describe.skipIf(!available)("the web console in Chromium", () => {
  beforeAll(async () => {
    // Always from the current sources, so the test never runs against a stale bundle.
    await build({ configFile: join(root, "console/vite.config.ts"), logLevel: "warn" })
    dir = mkdtempSync(join(tmpdir(), "tollgate-console-"))
    sim = await startSimulator({ videoMillis: 1500 })
    slowSim = await startSimulator({ faults: { latencyMs: 400 } })
    receiver = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        received.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8") })
        response.writeHead(200).end()
      })
    })
    await new Promise<void>((done) => receiver.listen(0, "127.0.0.1", done))
    const address = receiver.address()
    const hook = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/hook`
    writeFileSync(join(dir, "tollgate.yaml"), config(sim.baseUrl, slowSim.baseUrl, hook))
    // The webhook is on loopback: the guarded fetcher may reach it only when told so.
    gateway = await startTestGateway({ configPath: join(dir, "tollgate.yaml"), fetchAllowHosts: ["127.0.0.1"] })
    context = await chromium.launchPersistentContext(join(dir, "profile"), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        // Two tabs (operator and key holder) poll at once: neither may be throttled for being in the background.
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows"
      ],
      viewport: { width: 1280, height: 900 }
    })
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gateway.url })
    context.setDefaultTimeout(30_000)
  }, 120_000)

  afterAll(async () => {
    await context?.close()
    await gateway?.close()
    await sim?.close()
    await slowSim?.close()
    await new Promise((done) => receiver?.close(done))
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  // The page being driven is always brought to the front: Chromium pauses media and composites no video frame in a
  // background tab (timers are kept running by the flags above).
  const shot = async (page: Page, name: string) => {
    if (shots !== undefined) await page.screenshot({ path: join(shots, `console-${name}.png`), fullPage: true })
  }

  /** The player has decoded a frame of the clip (fetched with the secret in a header, played from a blob: URL). */
  const videoPlays = async (page: Page) => {
    await page.getByTestId("video-player").first().waitFor()
    await page.waitForFunction(() => {
      const video = document.querySelector<HTMLVideoElement>("[data-testid=video-player]")
      return video !== null && video.readyState >= 2 && video.src.startsWith("blob:")
    })
    // Seek into the clip so the frame on screen (and in the screenshots) is a decoded picture.
    return page.evaluate(
      () =>
        new Promise<number>((done) => {
          const video = document.querySelector<HTMLVideoElement>("[data-testid=video-player]") as HTMLVideoElement
          video.addEventListener("seeked", () => done(video.duration), { once: true })
          video.currentTime = 1
        })
    )
  }

  /** How many times the webhook has been sent the event `eventId`. */
  const sentTimes = (eventId: string) => received.filter((r) => r.headers["x-tollgate-event-id"] === eventId).length

  const eventually = async (what: string, probe: () => boolean, timeoutMs = 30_000) => {
    const until = Date.now() + timeoutMs
    while (!probe()) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
      await new Promise((done) => setTimeout(done, 50))
    }
  }

  const signIn = async (page: Page, role: "Operator" | "Key holder", secret: string) => {
    await page.goto(`${gateway.url}/console/`)
    await page.getByLabel(role, { exact: true }).check()
    await page.locator("input[name=secret]").fill(secret)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("button", { name: "Sign out" }).waitFor()
  }

  it("operator and key holder: account, deposit, key, chat, image, ledger, chart, video, upstreams, alerts, revoke", async () => {
    const errors: Array<string> = []
    const operator = await context.newPage()
    operator.on("pageerror", (e) => errors.push(`operator: ${e.message}`))

    // ---- operator: the shell is served with its security headers; a wrong token is refused ----
    const shell = await operator.goto(`${gateway.url}/console/`)
    const headers = shell?.headers() ?? {}
    assert.match(headers["content-security-policy"] ?? "", /default-src 'self'/)
    assert.strictEqual(headers["x-frame-options"], "DENY")
    await operator.locator("input[name=secret]").fill("wrong-token")
    await operator.getByRole("button", { name: "Sign in" }).click()
    await operator.getByRole("alert").filter({ hasText: "admin token" }).waitFor()

    await signIn(operator, "Operator", gateway.adminToken)
    await operator.getByText("No accounts yet").waitFor()

    // ---- create an account, deposit ----
    await operator.locator("input[name=account-name]").fill("Acme Browser Co")
    await operator.getByRole("button", { name: "Create account" }).click()
    await operator.getByTestId("account-name").filter({ hasText: "Acme Browser Co" }).waitFor()
    const accountId = new URL(operator.url()).hash.split("/")[2]
    await operator.locator("input[name=amount]").fill("25.00")
    await operator.getByRole("button", { name: "Deposit" }).click()
    await operator.getByText("Deposited $25.000000").waitFor()
    await operator.getByTestId("balance-available").filter({ hasText: "$25.000000" }).waitFor()
    await shot(operator, "account")
    await operator.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Accounts" }).click()
    await operator.getByTestId("accounts-table").getByText("Acme Browser Co").waitFor()
    await shot(operator, "accounts")
    await operator.getByTestId("accounts-table").getByText("Acme Browser Co").click()
    await operator.getByTestId("balance-available").filter({ hasText: "$25.000000" }).waitFor()

    // ---- create a key with a spend limit, copy it ----
    await operator.getByRole("link", { name: "API keys" }).click()
    await operator.getByText("This account has no API keys yet.").waitFor()
    await operator.locator("input[name=key-name]").fill("browser")
    await operator.locator("input[name=key-limit]").fill("5.00")
    await operator.getByRole("button", { name: "Create key" }).click()
    const shown = (await operator.getByTestId("new-key-value").textContent())?.trim() ?? ""
    assert.match(shown, /^sk-/)
    await operator.getByText("It is shown only once").waitFor()
    await operator.getByRole("button", { name: "Copy" }).click()
    await operator.getByRole("button", { name: "Copied" }).waitFor()
    const key = await operator.evaluate(() => navigator.clipboard.readText())
    assert.strictEqual(key, shown)
    await operator.getByTestId("key-row").filter({ hasText: "browser" }).waitFor()
    await shot(operator, "keys")
    // The secret never lands in the URL or in local storage.
    assert.notInclude(operator.url(), key)
    assert.strictEqual(await operator.evaluate(() => localStorage.length), 0)

    // ---- key holder: chat and an image from the playground, each with its charge ----
    const holder = await context.newPage()
    holder.on("pageerror", (e) => errors.push(`holder: ${e.message}`))
    await signIn(holder, "Key holder", key)
    await holder.getByTestId("holder-available").filter({ hasText: "$25.000000" }).waitFor()
    await holder.getByRole("link", { name: "Playground" }).click()
    await holder.locator("select[name=playground-model]").selectOption("sim-openai")
    await holder.getByRole("button", { name: "Send" }).click()
    await holder.getByTestId("playground-result").waitFor()
    const chatCharge = await holder.getByTestId("playground-charge").textContent()
    assert.match(chatCharge ?? "", /^\$0\.0000\d\d$/)
    assert.notStrictEqual(chatCharge, "$0.000000")

    await holder.getByRole("tab", { name: "Image" }).click()
    await holder.locator("select[name=playground-model]").selectOption("imgchat-2.5-flash-image")
    await holder.getByRole("button", { name: "Generate image" }).click()
    const image = holder.getByTestId("generated-image").first()
    await image.waitFor()
    await holder.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>("[data-testid=generated-image]")
      return img?.complete === true && img.naturalWidth > 0
    })
    assert.strictEqual(await holder.getByTestId("playground-charge").textContent(), "$0.039000")
    // The balance updates without a reload: 25 − 0.039 − the chat's charge.
    await holder
      .getByTestId("holder-available")
      .filter({ hasText: /^\$24\.96\d{4}$/ })
      .waitFor()
    assert.notInclude(await holder.getByTestId("playground-result").textContent(), "data:image")
    await shot(holder, "playground-image")
    // The dedicated image model answers in b64_json; its charge is per output image token.
    await holder.locator("select[name=playground-model]").selectOption("imggen-2")
    await holder.getByRole("button", { name: "Generate image" }).click()
    await holder.getByTestId("playground-charge").filter({ hasNotText: "$0.039000" }).waitFor()
    await holder.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>("[data-testid=generated-image]")
      return img?.complete === true && img.naturalWidth > 0
    })
    assert.match((await holder.getByTestId("playground-charge").textContent()) ?? "", /^\$0\.0\d{5}$/)

    // ---- operator: the charges in the ledger (filtered) and the chart ----
    await operator.bringToFront()
    await operator.getByRole("link", { name: "Ledger" }).click()
    await operator.getByTestId("ledger-table").waitFor()
    await operator.locator("select[name=filter-model]").selectOption("imgchat-2.5-flash-image")
    await operator.locator("select[name=filter-type]").selectOption("UsageRecalculated")
    const rows = operator.getByTestId("ledger-row")
    await rows.first().waitFor()
    assert.strictEqual(await rows.count(), 1)
    assert.include(await rows.first().textContent(), "$0.039000")
    assert.include(await rows.first().textContent(), "browser")
    const download = operator.waitForEvent("download")
    await operator.getByRole("button", { name: "Export CSV" }).click()
    const csvPath = await (await download).path()
    const csv = readFileSync(csvPath, "utf8").trim().split("\r\n")
    assert.strictEqual(csv.length, 2)
    assert.include(csv[1], "UsageRecalculated")
    assert.include(csv[1], "0.039000")
    await operator.locator("select[name=filter-type]").selectOption("")
    await operator.locator("select[name=filter-model]").selectOption("")
    await shot(operator, "ledger")

    await operator.getByRole("link", { name: "Usage" }).click()
    await operator.getByTestId("usage-chart").waitFor()
    await operator.getByText("Show as table").click()
    const usage = operator.getByTestId("usage-table")
    await usage.getByText("imgchat-2.5-flash-image").waitFor()
    assert.include(await usage.textContent(), "$0.039000")
    assert.include(await usage.textContent(), "sim-openai")
    // Chart.js drew on the canvas (it is not blank).
    const drawn = await operator.evaluate(() => {
      const canvas = document.querySelector<HTMLCanvasElement>("[data-testid=usage-chart]")
      const data = canvas?.getContext("2d")?.getImageData(0, 0, canvas.width, canvas.height).data ?? []
      let painted = 0
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted++
      return painted
    })
    assert.isAbove(drawn, 1000)
    await shot(operator, "usage")

    // ---- key holder: a video with a progress bar, then the player and its charge ----
    await holder.bringToFront()
    await holder.getByRole("tab", { name: "Video" }).click()
    await holder.getByRole("button", { name: "Submit video" }).click()
    await holder.getByTestId("playground-video").waitFor()
    await holder.locator("[data-testid=playground-video][data-status=completed]").waitFor({ timeout: 60_000 })
    assert.approximately(await videoPlays(holder), 4, 0.2)
    // 480p 16:9, 4 s: 40,595 tokens at 1.40 per 1M.
    await holder.getByTestId("playground-charge").filter({ hasText: "$0.056833" }).waitFor()
    await shot(holder, "playground-video")
    await holder.getByRole("link", { name: "Overview" }).click()
    await holder.getByTestId("usage-chart").waitFor()
    await shot(holder, "holder-overview")
    await holder.getByRole("link", { name: "Playground" }).click()

    await operator.bringToFront()
    await operator.getByRole("link", { name: "Videos" }).click()
    await operator.locator("[data-testid=video-card][data-status=completed]").waitFor()
    assert.approximately(await videoPlays(operator), 4, 0.2)
    await shot(operator, "videos")

    await operator.getByRole("link", { name: "Models" }).click()
    await operator.getByTestId("models-table").getByText("imggen-2").waitFor()
    assert.include(await operator.getByTestId("models-table").textContent(), "$40.000000")
    await operator.getByRole("link", { name: "Integrity" }).click()
    await operator.getByRole("button", { name: "Run replay verify" }).click()
    await operator.getByTestId("result-replay").getByText("OK: no mismatch found.").waitFor({ timeout: 60_000 })
    await operator.getByRole("button", { name: "Run audit verify" }).click()
    await operator.getByTestId("result-verify").getByText("OK: no mismatch found.").waitFor({ timeout: 60_000 })

    // ---- upstreams: each deployment's health; an upstream disabled (after a confirmation) and enabled again ----
    await operator.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Upstreams" }).click()
    const upstream = operator.getByTestId("upstream-sim-openai")
    const deployment = upstream.getByTestId("deployments-sim-openai").locator("[data-model=sim-openai]")
    await deployment.locator(".badge", { hasText: "healthy" }).waitFor()
    assert.strictEqual(await deployment.getAttribute("data-deployment"), "sim-openai/sim-openai")
    assert.include(await deployment.textContent(), "0.0%")
    assert.strictEqual(await upstream.getAttribute("data-state"), "enabled")
    await upstream.getByRole("button", { name: "Disable", exact: true }).click()
    await upstream.getByRole("alertdialog", { name: "Confirm disabling" }).getByText("take no traffic").waitFor()
    await upstream.getByRole("button", { name: "Yes, disable" }).click()
    await operator.locator("[data-testid=upstream-sim-openai][data-state=disabled]").waitFor()
    await upstream.getByTestId("upstream-disabled").filter({ hasText: "disabled by an operator" }).waitFor()
    await deployment.locator(".badge", { hasText: "disabled" }).waitFor()
    // Only the named upstream is out.
    assert.strictEqual(await operator.getByTestId("upstream-sim-gemini").getAttribute("data-state"), "enabled")
    await shot(operator, "upstreams")
    await upstream.getByRole("button", { name: "Enable", exact: true }).click()
    await operator.locator("[data-testid=upstream-sim-openai][data-state=enabled]").waitFor()
    await deployment.locator(".badge", { hasText: "healthy" }).waitFor()
    assert.strictEqual(await upstream.getByTestId("upstream-disabled").count(), 0)

    // ---- alerts: the first charge took the balance below 100.00; its alert was delivered, and is resent ----
    await operator.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Alerts" }).click()
    const deliveries = operator.getByTestId("deliveries-table")
    const lowBalance = deliveries.locator("[data-testid=delivery-row][data-type='balance.low']")
    await deliveries.locator("[data-testid=delivery-row][data-type='balance.low'][data-status=delivered]").waitFor()
    assert.strictEqual(await lowBalance.count(), 1)
    const deliveryId = (await lowBalance.getAttribute("data-delivery")) ?? ""
    const eventId = (await lowBalance.getAttribute("data-event-id")) ?? ""
    assert.match(eventId, /^evt_[0-9a-f]{32}$/)
    assert.strictEqual(sentTimes(eventId), 1)
    assert.strictEqual(await lowBalance.getByRole("link").getAttribute("href"), `#/accounts/${accountId}`)
    assert.include(await lowBalance.textContent(), "200")
    // The event, as the webhook received it, unfolds under its row.
    const event = deliveries.locator(`[data-testid=delivery-event][data-delivery="${deliveryId}"]`)
    await lowBalance.getByRole("button", { name: "balance.low" }).click()
    assert.include(await event.textContent(), eventId)
    const data = JSON.parse((await event.getByTestId("event-data").textContent()) ?? "{}") as Record<string, string>
    // The balance after the chat, the first charge.
    assert.match(data.available, /^24\.9999\d\d$/)
    assert.deepStrictEqual(data, { accountId, available: data.available, threshold: "100.000000" })
    // The status filter asks the server for that status only.
    await operator.getByRole("button", { name: "Failed", exact: true }).click()
    await operator.getByText("No failed delivery.").waitFor()
    await operator.getByRole("button", { name: "Delivered", exact: true }).click()
    await lowBalance.waitFor()
    await operator.getByRole("button", { name: "All", exact: true }).click()
    await lowBalance.waitFor()
    await operator.getByTestId(`resend-${deliveryId}`).click()
    await lowBalance
      .getByTestId("resend-note")
      .filter({ hasText: /^(Queued to be sent again|Sent again)\.$/ })
      .waitFor()
    // The same event, with the same id, reaches the webhook a second time; the page shows it sent again.
    await eventually("the resent alert", () => sentTimes(eventId) === 2)
    await lowBalance
      .getByTestId("resend-note")
      .filter({ hasText: /^Sent again\.$/ })
      .waitFor()
    assert.strictEqual(await lowBalance.getAttribute("data-status"), "delivered")
    assert.strictEqual(
      received
        .filter((r) => r.headers["x-tollgate-event-id"] === eventId)
        .map((r) => JSON.parse(r.body).id)
        .join(),
      `${eventId},${eventId}`
    )
    await lowBalance.getByRole("button", { name: "balance.low" }).click()
    await event.waitFor()
    await shot(operator, "alerts")

    // ---- revoke (with confirmation); the playground is refused ----
    await operator.goto(`${gateway.url}/console/#/accounts/${accountId}/keys`)
    await operator.getByRole("button", { name: "Revoke" }).click()
    await operator.getByRole("button", { name: "Yes, revoke" }).click()
    await operator.getByTestId("key-row").getByText("revoked").waitFor()

    await holder.bringToFront()
    await holder.getByRole("tab", { name: "Chat" }).click()
    await holder.getByRole("button", { name: "Send" }).click()
    await holder.getByRole("alert").filter({ hasText: "This API key has been revoked." }).waitFor()

    // ---- phone width: nothing overflows sideways ----
    await holder.bringToFront()
    await holder.setViewportSize({ width: 390, height: 844 })
    await holder.getByRole("link", { name: "Overview" }).click()
    await holder.getByRole("alert").first().waitFor()
    await operator.bringToFront()
    await operator.setViewportSize({ width: 390, height: 844 })
    await operator.getByRole("link", { name: "Overview" }).click()
    await operator.getByTestId("balance").waitFor()
    for (const page of [holder, operator]) {
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      assert.isAtMost(overflow, 0)
    }
    await shot(operator, "phone")
    await operator.getByRole("link", { name: "Upstreams" }).click()
    await operator.getByTestId("deployments-sim-openai").waitFor()
    assert.isAtMost(await operator.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0)
    await operator.getByRole("link", { name: "Alerts" }).click()
    await operator.getByTestId("deliveries-table").waitFor()
    assert.isAtMost(await operator.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0)
    assert.deepStrictEqual(errors, [])
  }, 240_000)

  it("batches: a holder's on both surfaces and every account's for the operator, with downloads and cancel", async () => {
    const errors: Array<string> = []
    const admin = (path: string, body?: unknown) => call(gateway.adminToken, path, body)
    const account = (await admin("/admin/accounts", { name: "Batch Co" })) as { id: string }
    await admin(`/admin/accounts/${account.id}/deposits`, { amount: "10.00", reference: "batches" })
    const { key } = (await admin(`/admin/accounts/${account.id}/keys`, { name: "batches" })) as { key: string }
    const v1 = (path: string, body?: unknown) => call(key, path, body)
    const chatLine = (id: string, model: string) => ({
      custom_id: id,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model, messages: [{ role: "user", content: `Say ${id}.` }], max_tokens: 20 }
    })
    const openAiBatch = async (model: string, lines: number) => {
      const form = new FormData()
      form.set("purpose", "batch")
      const jsonl = Array.from({ length: lines }, (_, i) => JSON.stringify(chatLine(`${model}-${i}`, model))).join("\n")
      form.set("file", new Blob([jsonl]), "lines.jsonl")
      const file = (await call(key, "/v1/files", form)) as { id: string }
      const body = { input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }
      return ((await v1("/v1/batches", body)) as { id: string }).id
    }
    const messageBatch = async (model: string, requests: number) => {
      const params = (i: number) => ({ model, max_tokens: 20, messages: [{ role: "user", content: `Say ${i}.` }] })
      const body = {
        requests: Array.from({ length: requests }, (_, i) => ({ custom_id: `m-${i}`, params: params(i) }))
      }
      return ((await v1("/v1/messages/batches", body)) as { id: string }).id
    }
    const status = async (path: string) => (await v1(path)) as { status?: string; processing_status?: string }
    // Two quick batches run to their end before the page opens; a slow one (96 lines at 400 ms, four at a time) is
    // still running when it does, and another is submitted for the operator to cancel: the cancels cut them short.
    const done = await openAiBatch("sim-openai", 2)
    const ended = await messageBatch("sim-openai", 2)
    await poll("the quick batches", async () => {
      return (
        (await status(`/v1/batches/${done}`)).status === "completed" &&
        (await status(`/v1/messages/batches/${ended}`)).processing_status === "ended"
      )
    })
    const slow = await openAiBatch("slow-model", 96)

    // ---- key holder: both surfaces, labelled; downloads; a running batch's progress, then cancelled here ----
    const holder = await context.newPage()
    holder.on("pageerror", (e) => errors.push(`holder: ${e.message}`))
    await signIn(holder, "Key holder", key)
    await holder.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Batches" }).click()
    const openAi = holder.getByRole("region", { name: "OpenAI batches" })
    const anthropic = holder.getByRole("region", { name: "Anthropic message batches" })
    const doneRow = openAi.locator(`[data-batch="${done}"][data-status=completed]`)
    await doneRow.waitFor()
    assert.strictEqual(await doneRow.getByTestId("batch-counts").textContent(), "2 ok · 2 total")
    const charged = (await doneRow.getByTestId("batch-charged").textContent()) ?? ""
    assert.match(charged, /^\$0\.0000\d\d$/)
    const output = holder.waitForEvent("download")
    await doneRow.getByRole("button", { name: "Output" }).click()
    const outputLines = readFileSync(await (await output).path(), "utf8")
      .trim()
      .split("\n")
    assert.deepStrictEqual(
      outputLines.map((line) => JSON.parse(line).custom_id),
      ["sim-openai-0", "sim-openai-1"]
    )
    const endedRow = anthropic.locator(`[data-batch="${ended}"][data-status=ended]`)
    await endedRow.waitFor()
    assert.include(await endedRow.getByTestId("batch-counts").textContent(), "2 succeeded")
    const results = holder.waitForEvent("download")
    await endedRow.getByRole("button", { name: "Results" }).click()
    const resultTypes = readFileSync(await (await results).path(), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).result.type)
    assert.deepStrictEqual(resultTypes, ["succeeded", "succeeded"])
    const slowRow = openAi.locator(`[data-batch="${slow}"]`)
    await slowRow.getByRole("progressbar").waitFor()
    await shot(holder, "holder-batches")
    await slowRow.getByRole("button", { name: "Cancel" }).click()
    await slowRow.getByRole("button", { name: "Yes, cancel" }).click()
    await openAi.locator(`[data-batch="${slow}"][data-status=cancelled]`).waitFor()
    const cancelled = (await v1(`/v1/batches/${slow}`)) as { status: string; request_counts: { completed: number } }
    assert.strictEqual(cancelled.status, "cancelled")
    assert.isBelow(cancelled.request_counts.completed, 96)

    // ---- operator: every account's batches, filtered; a batch's money; a slow message batch cancelled ----
    const slowMessages = await messageBatch("slow-model", 96)
    const operator = await context.newPage()
    operator.on("pageerror", (e) => errors.push(`operator: ${e.message}`))
    await signIn(operator, "Operator", gateway.adminToken)
    await operator.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Batches" }).click()
    const table = operator.getByTestId("admin-batches")
    for (const id of [done, ended, slow, slowMessages]) await table.locator(`[data-batch="${id}"]`).waitFor()
    assert.include(await table.locator(`[data-batch="${ended}"]`).textContent(), "Anthropic")
    await operator.locator("select[name=batch-account]").selectOption(account.id)
    await operator.locator("select[name=batch-status]").selectOption("cancelled")
    await operator.waitForFunction(() => document.querySelectorAll("[data-testid=admin-batch-row]").length === 1)
    assert.include(await table.locator(`[data-batch="${slow}"]`).textContent(), "Batch Co")
    await operator.locator("select[name=batch-status]").selectOption("")
    await table.locator(`[data-batch="${done}"]`).getByRole("link", { name: done }).click()
    await operator.getByTestId("batch-charged").filter({ hasText: charged }).waitFor()
    const money = (await call(gateway.adminToken, `/admin/batches/${done}`)) as Record<string, string>
    assert.strictEqual(await operator.getByTestId("batch-refunded").textContent(), `$${money.refunded}`)
    assert.strictEqual(await operator.getByTestId("batch-held").textContent(), "$0.000000")
    await operator.getByRole("link", { name: "← Batches" }).click()
    await table.getByRole("link", { name: slowMessages }).click()
    await operator.locator("[data-testid=admin-batch][data-status=in_progress]").waitFor()
    await shot(operator, "batch")
    await operator.getByRole("button", { name: "Cancel" }).click()
    await operator.getByRole("button", { name: "Yes, cancel" }).click()
    await operator.locator("[data-testid=admin-batch][data-status=cancelled]").waitFor()
    const shown = await operator.getByTestId("batch-charged").textContent()
    const view = (await call(gateway.adminToken, `/admin/batches/${slowMessages}`)) as Record<string, string>
    assert.strictEqual(view.status, "cancelled")
    assert.strictEqual(shown, `$${view.charged}`)
    assert.strictEqual(await operator.getByTestId("batch-held").textContent(), `$${view.held}`)
    assert.strictEqual(view.held, "0.000000")
    assert.strictEqual((await status(`/v1/messages/batches/${slowMessages}`)).processing_status, "ended")
    await operator.getByRole("link", { name: "← Batches" }).click()
    await table.locator(`[data-batch="${slowMessages}"][data-status=cancelled]`).waitFor()
    await shot(operator, "batches")
    // Pages of 20, following the API's cursor: 17 more make 21 batches for the account.
    for (let i = 0; i < 17; i++) await messageBatch("sim-openai", 1)
    await operator.locator("select[name=batch-account]").selectOption(account.id)
    await operator.waitForFunction(() => document.querySelectorAll("[data-testid=admin-batch-row]").length === 20)
    await operator.getByRole("button", { name: "Older" }).click()
    await table.locator(`[data-batch="${done}"]`).waitFor()
    assert.strictEqual(await table.getByTestId("admin-batch-row").count(), 1)
    await operator.getByRole("button", { name: "Newer" }).click()
    await operator.waitForFunction(() => document.querySelectorAll("[data-testid=admin-batch-row]").length === 20)
    // At phone width the tables scroll inside their cards; the page does not scroll sideways.
    await operator.setViewportSize({ width: 390, height: 844 })
    assert.isAtMost(await operator.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0)

    // ---- an answer that is not a list shows as an error in the page ----
    await holder.bringToFront()
    await holder.route(
      (url) => url.pathname === "/v1/messages/batches",
      (route) => route.fulfill({ json: { object: "list" } })
    )
    await holder.reload()
    await anthropic.getByRole("alert").filter({ hasText: "unexpected answer from /v1/messages/batches" }).waitFor()
    await openAi.locator(`[data-batch="${done}"]`).waitFor()
    assert.deepStrictEqual(errors, [])
  }, 60_000)
})

/** A JSON call with `secret` as the bearer (a FormData body is sent as multipart); fails on any non-2xx. */
const call = async (secret: string, path: string, body?: unknown) => {
  const init: RequestInit =
    body === undefined
      ? {}
      : body instanceof FormData
        ? { method: "POST", body }
        : { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }
  const response = await fetch(`${gateway.url}${path}`, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${secret}` }
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${path}: ${response.status} ${text}`)
  return JSON.parse(text) as unknown
}

const poll = async (what: string, probe: () => Promise<boolean>, timeoutMs = 20_000) => {
  const until = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((done) => setTimeout(done, 50))
  }
}
