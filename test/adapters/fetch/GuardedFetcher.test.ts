import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { PNG } from "pngjs"
import { FetchRefused, type FetchRefusedReason } from "../../../src/app/ports/FetchRefused.ts"
import { type FetchLimits, GuardedFetcher } from "../../../src/app/ports/GuardedFetcher.ts"
import {
  type GuardedFetcherOptions,
  type ResolvedAddress,
  guardedFetcherLayer
} from "../../../src/adapters/fetch/GuardedFetcher.ts"

const png = (() => {
  const image = new PNG({ width: 4, height: 3 })
  image.data.fill(200)
  return PNG.sync.write(image)
})()

let server: Server
let origin = ""
let port = 0

// The fetch deadline runs on the Clock, so these tests use the live one (`it.live`).
// Every case is served from loopback, which is exactly what the guard refuses unless the allow-list says otherwise.
beforeAll(
  () =>
    new Promise<void>((ready) => {
      server = createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://local")
        const path = url.pathname
        if (path === "/image.png") {
          res.writeHead(200, { "content-type": "image/png", "content-length": String(png.length) })
          res.end(png)
        } else if (path === "/redirect") {
          res.writeHead(302, { location: url.searchParams.get("to")! })
          res.end()
        } else if (path.startsWith("/chain/")) {
          const left = Number(path.slice("/chain/".length))
          res.writeHead(
            left === 0 ? 200 : 307,
            left === 0 ? { "content-type": "image/png" } : { location: `/chain/${left - 1}` }
          )
          res.end(left === 0 ? png : undefined)
        } else if (path === "/big") {
          res.writeHead(200, { "content-type": "image/png" }) // chunked: the size is only known while streaming
          for (let i = 0; i < 64; i++) res.write(Buffer.alloc(16 * 1024, i))
          res.end()
        } else if (path === "/big-declared") {
          res.writeHead(200, { "content-type": "image/png", "content-length": String(10 * 1024 * 1024) })
          res.write(Buffer.alloc(1024))
        } else if (path === "/slow") {
          res.writeHead(200, { "content-type": "image/png" })
          const timer = setInterval(() => res.write("x"), 50)
          res.on("close", () => clearInterval(timer))
        } else if (path === "/page") {
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
          res.end("<html></html>")
        } else if (path === "/hang") {
          // never answers
        } else if (path === "/typed") {
          res.writeHead(200, { "content-type": "Image/PNG; q=1" })
          res.end(png)
        } else {
          res.writeHead(404, { "content-type": "text/plain" })
          res.end("not found")
        }
      })
      server.listen(0, "127.0.0.1", () => {
        port = (server.address() as AddressInfo).port
        origin = `http://127.0.0.1:${port}`
        ready()
      })
    })
)

afterAll(
  () =>
    new Promise<void>((done) => {
      server.closeAllConnections()
      server.close(() => done())
    })
)

const images: FetchLimits = { maxBytes: 64 * 1024, timeoutMs: 2_000, accept: (type) => type.startsWith("image/") }

const names: Readonly<Record<string, ReadonlyArray<ResolvedAddress>>> = {
  "evil.test": [{ address: "10.0.0.1", family: 4 }],
  "mixed.test": [
    { address: "93.184.216.34", family: 4 },
    { address: "192.168.0.10", family: 4 }
  ],
  "images.internal": [{ address: "127.0.0.1", family: 4 }],
  "sneaky.test": [{ address: "::ffff:127.0.0.1", family: 6 }]
}

const fakeResolver =
  (lookups: Array<string> = []) =>
  (hostname: string) => {
    lookups.push(hostname)
    const found = names[hostname]
    return found === undefined
      ? Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }))
      : Promise.resolve(found)
  }

const run = (url: string, options: GuardedFetcherOptions, limits: FetchLimits = images) =>
  Effect.gen(function* () {
    const fetcher = yield* GuardedFetcher
    return yield* fetcher.fetch(url, limits)
  }).pipe(Effect.provide(guardedFetcherLayer({ lookup: fakeResolver(), ...options })))

const refusal = (url: string, options: GuardedFetcherOptions, limits: FetchLimits = images) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(run(url, options, limits))
    assert.isTrue(Exit.isFailure(exit), `expected ${url} to be refused`)
    const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    assert.instanceOf(error, FetchRefused)
    return error as FetchRefused
  })

const expectRefused = (url: string, reason: FetchRefusedReason, options: GuardedFetcherOptions = {}, limits = images) =>
  Effect.gen(function* () {
    const error = yield* refusal(url, options, limits)
    assert.strictEqual(error.reason, reason, error.message)
    return error
  })

const local = { allowHosts: ["127.0.0.1"] }

describe("GuardedFetcher", () => {
  it.live("with the allow-list off, every loopback spelling is refused", () =>
    Effect.gen(function* () {
      for (const host of [
        "127.0.0.1",
        "2130706433",
        "0x7f.1",
        "017700000001",
        "127.1",
        "[::1]",
        "[::ffff:127.0.0.1]"
      ]) {
        const error = yield* expectRefused(`http://${host}:${port}/image.png`, "blocked-address")
        assert.match(error.message, /loopback/)
      }
      const named = yield* expectRefused(`http://sneaky.test:${port}/image.png`, "blocked-address")
      assert.strictEqual(
        named.message,
        `cannot fetch http://sneaky.test:${port}/image.png: sneaky.test resolves to ::ffff:127.0.0.1, a loopback (in an IPv4-mapped IPv6 address) address`
      )
      yield* expectRefused(`http://localhost:${port}/image.png`, "blocked-address", { lookup: undefined })
    })
  )

  it.live("with 127.0.0.1 allowed, a PNG is fetched", () =>
    Effect.gen(function* () {
      const fetched = yield* run(`${origin}/image.png`, local)
      assert.deepStrictEqual(Buffer.from(fetched.bytes), png)
      assert.strictEqual(fetched.contentType, "image/png")
      assert.strictEqual(fetched.finalUrl, `${origin}/image.png`)
      const typed = yield* run(`${origin}/typed`, local)
      assert.strictEqual(typed.contentType, "image/png")
    })
  )

  it.live("connects to the vetted address: an allowed name is resolved once, by the injected resolver", () =>
    Effect.gen(function* () {
      const lookups: Array<string> = []
      const fetched = yield* run(`http://images.internal:${port}/image.png`, {
        allowHosts: ["images.internal"],
        lookup: fakeResolver(lookups)
      })
      assert.strictEqual(fetched.bytes.length, png.length)
      assert.deepStrictEqual(lookups, ["images.internal"])
      // The same name without the allow-list: its address is loopback.
      yield* expectRefused(`http://images.internal:${port}/image.png`, "blocked-address")
    })
  )

  it.live("redirects are followed and re-checked on every hop", () =>
    Effect.gen(function* () {
      const chained = yield* run(`${origin}/chain/5`, local)
      assert.strictEqual(chained.finalUrl, `${origin}/chain/0`)
      const tooMany = yield* expectRefused(`${origin}/chain/6`, "redirect", local)
      assert.match(tooMany.message, /more than 5 redirects/)
      const toPrivate = yield* expectRefused(
        `${origin}/redirect?to=${encodeURIComponent("http://evil.test/x.png")}`,
        "blocked-address",
        local
      )
      assert.match(
        toPrivate.message,
        /redirect to http:\/\/evil\.test\/x\.png: evil\.test resolves to 10\.0\.0\.1, a private address/
      )
      const toMetadata = yield* expectRefused(
        `${origin}/redirect?to=${encodeURIComponent("http://169.254.169.254/latest/meta-data/")}`,
        "blocked-address",
        local
      )
      assert.match(toMetadata.message, /cloud metadata/)
      yield* expectRefused(`${origin}/redirect?to=${encodeURIComponent("file:///etc/passwd")}`, "scheme", local)
      // A redirect from an allowed host to a refused loopback address on another port.
      yield* expectRefused(
        `${origin}/redirect?to=${encodeURIComponent(`http://[::1]:${port}/image.png`)}`,
        "blocked-address",
        local
      )
    })
  )

  it.live("only http and https; no credentials; no metadata host names", () =>
    Effect.gen(function* () {
      for (const url of [
        "file:///etc/passwd",
        "ftp://127.0.0.1/image.png",
        "data:image/png;base64,iVBORw0KGgo=",
        "gopher://127.0.0.1:70/_x",
        "javascript:alert(1)"
      ]) {
        yield* expectRefused(url, "scheme", local)
      }
      yield* expectRefused("not a url", "invalid-url", local)
      yield* expectRefused(`http://user:pw@127.0.0.1:${port}/image.png`, "credentials", local)
      yield* expectRefused("http://metadata.google.internal/computeMetadata/v1/", "blocked-host")
      yield* expectRefused("http://[fd00:ec2::254]/latest/meta-data/", "blocked-address")
    })
  )

  it.live("a name resolving to a private address is refused, as is one with any private address", () =>
    Effect.gen(function* () {
      const error = yield* expectRefused("http://evil.test/cat.png", "blocked-address")
      assert.strictEqual(
        error.message,
        "cannot fetch http://evil.test/cat.png: evil.test resolves to 10.0.0.1, a private address"
      )
      yield* expectRefused("http://mixed.test/cat.png", "blocked-address")
      yield* expectRefused("http://nowhere.test/cat.png", "dns")
      // A CIDR on the allow-list admits the addresses in it, under any name.
      const admitted = yield* run(`http://images.internal:${port}/image.png`, { allowHosts: ["127.0.0.0/8"] })
      assert.strictEqual(admitted.finalUrl, `http://images.internal:${port}/image.png`)
      yield* expectRefused("http://evil.test/cat.png", "blocked-address", { allowHosts: ["127.0.0.0/8"] })
    })
  )

  it.live("bodies over maxBytes are refused, whether declared or streamed", () =>
    Effect.gen(function* () {
      const streamed = yield* expectRefused(`${origin}/big`, "too-large", local, { ...images, maxBytes: 100_000 })
      assert.match(streamed.message, /larger than 100000 bytes/)
      yield* expectRefused(`${origin}/big-declared`, "too-large", local)
      const fits = yield* run(`${origin}/big`, local, { ...images, maxBytes: 2 * 1024 * 1024 })
      assert.strictEqual(fits.bytes.length, 64 * 16 * 1024)
    })
  )

  it.live("a slow drip body times out within the total timeout", () =>
    Effect.gen(function* () {
      const error = yield* expectRefused(`${origin}/slow`, "timeout", local, { ...images, timeoutMs: 300 })
      assert.match(error.message, /within 300 ms/)
    })
  )

  it.live("wrong content type, error statuses and closed ports are refused", () =>
    Effect.gen(function* () {
      const html = yield* expectRefused(`${origin}/page`, "content-type", local)
      assert.match(html.message, /content type text\/html is not accepted/)
      const missing = yield* expectRefused(`${origin}/missing.png`, "http-status", local)
      assert.match(missing.message, /HTTP 404/)
      const closed = yield* Effect.promise(
        () =>
          new Promise<number>((resolve) => {
            const probe = createServer()
            probe.listen(0, "127.0.0.1", () => {
              const free = (probe.address() as AddressInfo).port
              probe.close(() => resolve(free))
            })
          })
      )
      yield* expectRefused(`http://127.0.0.1:${closed}/image.png`, "network", local)
    })
  )
})

const withFetcher = <A, E>(
  options: GuardedFetcherOptions,
  use: (fetcher: GuardedFetcher["Service"]) => Effect.Effect<A, E>
) =>
  Effect.flatMap(Effect.service(GuardedFetcher), use).pipe(
    Effect.provide(guardedFetcherLayer({ lookup: fakeResolver(), ...options }))
  )

const failureOf = <A>(effect: Effect.Effect<A, FetchRefused>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "expected a refusal")
    return (Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined) as FetchRefused
  })

const streamed = async (body: AsyncIterable<Uint8Array>) => {
  const chunks: Array<Uint8Array> = []
  for await (const chunk of body) chunks.push(chunk)
  return Buffer.concat(chunks)
}

describe("GuardedFetcher.probe (HEAD)", () => {
  it.live("answers the final status and media type, redirects followed, any status", () =>
    withFetcher(local, (fetcher) =>
      Effect.gen(function* () {
        const found = yield* fetcher.probe(`${origin}/redirect?to=/typed`, 2_000)
        assert.deepStrictEqual(found, { status: 200, contentType: "image/png", finalUrl: `${origin}/typed` })
        const missing = yield* fetcher.probe(`${origin}/nothing`, 2_000)
        assert.strictEqual(missing.status, 404)
      })
    )
  )

  it.live("applies the address rule to the link and to every redirect", () =>
    Effect.gen(function* () {
      const direct = yield* withFetcher({}, (fetcher) => failureOf(fetcher.probe(`${origin}/image.png`, 2_000)))
      assert.strictEqual(direct.reason, "blocked-address")
      const hop = yield* withFetcher(local, (fetcher) =>
        failureOf(fetcher.probe(`${origin}/redirect?to=http://evil.test/x.png`, 2_000))
      )
      assert.strictEqual(hop.reason, "blocked-address")
      assert.include(hop.message, "10.0.0.1")
    })
  )

  it.live("gives up after its timeout", () =>
    withFetcher(local, (fetcher) =>
      Effect.gen(function* () {
        const started = Date.now()
        const error = yield* failureOf(fetcher.probe(`${origin}/hang`, 300))
        assert.strictEqual(error.reason, "timeout")
        assert.isBelow(Date.now() - started, 2_000)
      })
    )
  )
})

describe("GuardedFetcher.open (a body handed over unread)", () => {
  it.live("streams the whole body of an allowed link, whatever its size limit", () =>
    withFetcher(local, (fetcher) =>
      Effect.gen(function* () {
        const opened = yield* fetcher.open(`${origin}/redirect?to=/big`, {
          headersTimeoutMs: 2_000,
          idleTimeoutMs: 2_000
        })
        assert.strictEqual(opened.status, 200)
        assert.strictEqual(opened.finalUrl, `${origin}/big`)
        const bytes = yield* Effect.promise(() => streamed(opened.body))
        assert.strictEqual(bytes.length, 64 * 16 * 1024)
      })
    )
  )

  it.live("a trusted origin skips the address rule for that origin only; redirects off it are vetted", () =>
    withFetcher({}, (fetcher) =>
      Effect.gen(function* () {
        const options = { headersTimeoutMs: 2_000, idleTimeoutMs: 2_000, trustedOrigins: [origin] }
        const opened = yield* fetcher.open(`${origin}/image.png`, options)
        assert.deepStrictEqual(new Uint8Array(yield* Effect.promise(() => streamed(opened.body))), new Uint8Array(png))
        const otherPort = yield* failureOf(fetcher.open(`http://127.0.0.1:${port + 1}/image.png`, options))
        assert.strictEqual(otherPort.reason, "blocked-address")
        const offOrigin = yield* failureOf(
          fetcher.open(`${origin}/redirect?to=http://[::ffff:127.0.0.1]:${port}/image.png`, options)
        )
        assert.strictEqual(offOrigin.reason, "blocked-address")
        const untrusted = yield* failureOf(
          fetcher.open(`${origin}/image.png`, { headersTimeoutMs: 2_000, idleTimeoutMs: 2_000 })
        )
        assert.strictEqual(untrusted.reason, "blocked-address")
      })
    )
  )

  it.live("hands over error statuses for the caller to judge", () =>
    withFetcher(local, (fetcher) =>
      Effect.gen(function* () {
        const opened = yield* fetcher.open(`${origin}/nothing`, { headersTimeoutMs: 2_000, idleTimeoutMs: 2_000 })
        assert.strictEqual(opened.status, 404)
        assert.strictEqual((yield* Effect.promise(() => streamed(opened.body))).toString(), "not found")
      })
    )
  )
})
