/** What the ledger's tests ask for a hold with: dollars as decimal text, no key, one model of the text plugin. */
import type { PlaceHoldInput } from "../../src/app/HoldCommand.ts"
import { usd } from "./Money.ts"

export const holdInput = (accountId: string, amount: string, requestId: string | null = null): PlaceHoldInput => ({
  accountId,
  amount: usd(amount),
  keyId: null,
  keySpendLimit: null,
  model: "m",
  plugin: "text",
  requestId
})
