/**
 * The web console: the single-page app built by `npm run build` into `dist/console`, served under `/console`. Files
 * are served with their content type; any other path under `/console` gets `index.html` (the app routes itself).
 * The console holds no server-side privilege: it calls the same admin and `/v1` endpoints scripts do.
 */
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { readFile } from "node:fs/promises"
import { extname, join, normalize, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { route } from "./Route.ts"

/** Where `vite build` writes the console (repo root `dist/console`). */
export const CONSOLE_DIR = resolve(fileURLToPath(new URL("../../dist/console", import.meta.url)))

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
  ".map": "application/json"
}

/**
 * Scripts and styles only from this origin; images and videos may be data: or blob: URLs (generated images arrive
 * inline, videos are fetched with the key in a header and played from a blob). Inline style attributes are allowed
 * because the chart library sizes its canvas with them.
 */
const SECURITY_HEADERS = {
  "content-security-policy": [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "media-src 'self' blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'"
  ].join("; "),
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer"
}

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Tollgate console</title>
<p>The console has not been built. Run <code>npm run build</code> (or restart with <code>npm start</code>, which builds it when it is missing).</p>`

// Edge: node:fs/promises is promise-based; a missing file is an ordinary "not found", not a failure.
const readOrUndefined = (path: string) =>
  Effect.tryPromise(() => readFile(path)).pipe(Effect.orElseSucceed(() => undefined))

const file = (bytes: Uint8Array, path: string, status = 200) =>
  HttpServerResponse.uint8Array(bytes, {
    status,
    contentType: CONTENT_TYPES[extname(path)] ?? "application/octet-stream",
    headers: {
      ...SECURITY_HEADERS,
      // Hashed asset names never change content; index.html must be fetched fresh to pick up a new build.
      "cache-control": path.includes(`${sep}assets${sep}`) ? "public, max-age=31536000, immutable" : "no-cache"
    }
  })

export const serveConsole = (root: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const pathname = new URL(request.url, "http://x").pathname
    if (pathname === "/console") {
      return HttpServerResponse.empty({ status: 308, headers: { location: "/console/", ...SECURITY_HEADERS } })
    }
    const relative = decodeURIComponent(pathname.slice("/console/".length))
    const candidate = normalize(join(root, relative))
    // Only files inside the build directory; `..` or an absolute path falls back to the app shell.
    if (relative !== "" && candidate.startsWith(root + sep) && !relative.includes("\0")) {
      const bytes = yield* readOrUndefined(candidate)
      if (bytes !== undefined) return file(bytes, candidate)
      // A missing asset is a 404, not the app shell (a stale page asking for an old bundle should fail loudly).
      if (relative.startsWith("assets/")) {
        return HttpServerResponse.text("not found", { status: 404, headers: SECURITY_HEADERS })
      }
    }
    const index = join(root, "index.html")
    const shell = yield* readOrUndefined(index)
    return shell === undefined
      ? HttpServerResponse.text(NOT_BUILT, {
          status: 503,
          contentType: "text/html; charset=utf-8",
          headers: SECURITY_HEADERS
        })
      : file(shell, index)
  }).pipe(
    Effect.catchDefect(() =>
      Effect.succeed(HttpServerResponse.text("bad path", { status: 400, headers: SECURITY_HEADERS }))
    )
  )

// The router's "/console/*" also matches "/console" itself (redirected to "/console/").
export const layerFrom = (root: string) => route("GET", "/console/*", serveConsole(root))

export const layer = layerFrom(CONSOLE_DIR)
