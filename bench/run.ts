/** `npm run bench -- <suite> [options]`: dispatches to a benchmark suite in bench/. */
const suites: Record<string, string> = { ledger: "./ledger.ts", latency: "./latency.ts", replay: "./replay.ts" }
suites.faults = "./faults.ts" // issue 15: poisoned batches and kill -9 (money under faults)
suites.suite = "./suite/main.ts" // issue 10: floor vs gateway on Postgres and embedded (bench/README.md)
suites.memory = "./memory.ts" // issue 20: RSS at rest, part by part, on both stores
suites.ladder = "./ladder/main.ts" // issue 29: floor → Effect server → in-memory ledger → Postgres → PGlite
suites.paired = "./ladder/paired.ts" // issue 29: two builds of one rung in alternating rounds (before/after)
suites.steps = "./ladder/steps.ts" // issue 29: Effect steps and fibers per request, counted (in-memory rung)
suites.idle = "./idle.ts" // issue 29: idle CPU, Postgres CPU and transactions per second (and a CPU profile)
suites.batchdrain = "./batchdrain.ts" // issue 33: interactive latency while a gateway-run batch drains
const suite = process.argv[2] ?? "ledger"
const module = suites[suite]
if (module === undefined) {
  console.error(`unknown benchmark suite '${suite}'; known: ${Object.keys(suites).join(", ")}`)
  process.exit(2)
}
await import(module)
