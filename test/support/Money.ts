/** Dollars as the tests write them (decimal text) in the ledger's integer micro-dollars. */
import { parseDecimal } from "../../src/domain/Money.ts"

export const usd = (text: string): bigint => parseDecimal(text) as bigint
