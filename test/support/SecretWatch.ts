/**
 * Runs beside every test file (vitest `setupFiles`): watches everything the process writes to stdout, stderr and
 * `console` — the in-process gateways' logs included — and every response body a test receives through `fetch`
 * (JSON, text and SSE streams as they are read; the official SDKs use `fetch` too), and fails the file if an API key
 * (`sk-` and 40+ characters) or an admin token (`tga_…`) appears. The one answer allowed to carry a key is its creation; the child-process gateways of the
 * kill -9 suites are checked there, on their own output.
 */
import { inspect } from "node:util"
import { afterAll, assert } from "vitest"

const SECRET = /sk-[A-Za-z0-9]{40,}|tga_[A-Za-z0-9_]{30,}/g

/**
 * Files share a worker process (vitest `isolate: false`) and this file runs again before each of them: the watchers
 * are installed once per process, and each file starts with an empty list of leaks, checked when it ends.
 */
const STATE = Symbol.for("tollgate/test/SecretWatch")
type Watch = { readonly leaks: Array<string> }
const installed = (globalThis as { [STATE]?: Watch })[STATE]
const watch: Watch = installed ?? { leaks: [] }
const leaks = watch.leaks
leaks.length = 0

const scan = (where: string, text: string) => {
  for (const match of text.matchAll(SECRET)) leaks.push(`${where}: …${match[0].slice(0, 8)}… in ${text.slice(0, 160)}`)
}

const watchStream = (stream: NodeJS.WriteStream, name: string) => {
  const write = stream.write.bind(stream) as (...args: Array<unknown>) => boolean
  stream.write = ((chunk: unknown, ...rest: Array<unknown>) => {
    if (typeof chunk === "string") scan(name, chunk)
    else if (chunk instanceof Uint8Array) scan(name, Buffer.from(chunk).toString("utf8"))
    return write(chunk, ...rest)
  }) as typeof stream.write
}

// vitest routes `console` of a worker to its reporter without touching stdout: the loggers write through it.
const watchConsole = () => {
  for (const level of ["log", "info", "warn", "error", "debug", "trace"] as const) {
    const original = console[level].bind(console)
    console[level] = (...args: Array<unknown>) => {
      scan(`console.${level}`, args.map((arg) => (typeof arg === "string" ? arg : inspect(arg))).join(" "))
      original(...args)
    }
  }
}

// The one answer that carries a key by design: its creation (shown once).
const KEY_CREATION = /^\/admin\/accounts\/[^/]+\/keys$/
// Longest secret the patterns match: a match split across two chunks is found in the overlap kept between them.
const OVERLAP = 96

/**
 * The body, read by the test as it would have been, with each chunk scanned on its way through (no copy: a stream the
 * test abandons is cancelled at its source as before). Media types are passed through unread.
 */
const inspected = (response: Response, where: string): Response => {
  const type = response.headers.get("content-type") ?? ""
  if (response.body === null || /^(audio|video|image)\/|octet-stream/.test(type)) return response
  const decoder = new TextDecoder()
  let tail = ""
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const text = tail + decoder.decode(chunk, { stream: true })
        scan(where, text)
        tail = text.slice(-OVERLAP)
        controller.enqueue(chunk)
      }
    })
  )
  const copy = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers
  })
  // Keep what callers read besides the body (the SDKs report `url`).
  Object.defineProperties(copy, {
    url: { value: response.url },
    redirected: { value: response.redirected }
  })
  return copy
}

const watchFetch = () => {
  const originalFetch = globalThis.fetch
  globalThis.fetch = (async (...args: Parameters<typeof fetch>) => {
    const response = await originalFetch(...args)
    const url = new URL(String(args[0] instanceof Request ? args[0].url : args[0]))
    const method = ((args[0] instanceof Request ? args[0].method : args[1]?.method) ?? "GET").toUpperCase()
    if (method === "POST" && KEY_CREATION.test(url.pathname)) return response
    return inspected(response, `${method} ${url.pathname} ${response.status}`)
  }) as typeof fetch
}

if (installed === undefined) {
  watchStream(process.stdout, "stdout")
  watchStream(process.stderr, "stderr")
  watchConsole()
  watchFetch()
  ;(globalThis as { [STATE]?: Watch })[STATE] = watch
}

afterAll(async () => {
  // Error bodies are read asynchronously: let the last ones land.
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.deepStrictEqual(leaks, [], "a secret appeared in a log line or a response")
})
