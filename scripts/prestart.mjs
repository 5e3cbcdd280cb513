// `npm start` runs this first, in one process: the console's build when it is missing, then the gateway's when it is
// missing or stale (scripts/build-gateway.mjs), so `npm ci && npm start` serves a fresh clone and an edited one alike.
import "../console/build-if-missing.mjs"
import { buildGateway } from "./build-gateway.mjs"

await buildGateway({ ifStale: true })
