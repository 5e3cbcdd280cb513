/** `npm run bench -- <suite> [options]`: dispatches to a benchmark suite in bench/. */
const suites: Record<string, string> = { ledger: "./ledger.ts", latency: "./latency.ts" }
const suite = process.argv[2] ?? "ledger"
const module = suites[suite]
if (module === undefined) {
  console.error(`unknown benchmark suite '${suite}'; known: ${Object.keys(suites).join(", ")}`)
  process.exit(2)
}
await import(module)
