/**
 * The ladder's "in-memory ledger" rung: the gateway exactly as `npm start` runs it (src/Launch.ts, same environment
 * variables), except that holds and settlements are decided in memory and never written (MemoryLedgerWriter.ts).
 * Bench only: nothing in `npm start` can reach this swap.
 */
import { launch } from "../../src/Launch.ts"
import { wrap } from "./MemoryLedgerWriter.ts"

launch({ ledgerWriter: wrap })
