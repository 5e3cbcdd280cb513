// `npm start`, in one process: the console's build when it is missing, the gateway's when it is missing or stale
// (scripts/build-gateway.mjs), so `npm ci && npm start` serves a fresh clone and an edited one alike; then the gateway.
// One process rather than a `prestart` script before `node dist/gateway/main.js`: npm running a second lifecycle
// script cost every start 0.2 s (bench/README.md, "PGlite on the baseline compiler").
import "../console/build-if-missing.mjs"
import { buildGateway } from "./build-gateway.mjs"

await buildGateway({ ifStale: true })
await import("../dist/gateway/main.js")
