import { assert, describe, it } from "@effect/vitest"
import { replaySummaryView } from "../../src/cli/Views.ts"

describe("replay summary", () => {
  it("verify: the verdict, the timing and a row count per table", () => {
    const text = replaySummaryView(
      {
        ok: true,
        events: 1200,
        accounts: 3,
        mismatches: [],
        durationMs: 1500,
        eventsPerSecond: 800,
        tables: { accounts: 3, holds: 40 }
      },
      "verify"
    )
    assert.strictEqual(
      text,
      [
        "Replay verified (1200 events, 3 accounts): the projections match the events.",
        "1.5 s, 800 events/s",
        "TABLE     ROWS",
        "accounts     3",
        "holds       40"
      ].join("\n")
    )
  })

  it("apply: what differed, the writer pause and what was rewritten", () => {
    const text = replaySummaryView(
      {
        ok: true,
        events: 10,
        accounts: 1,
        mismatches: [{ table: "accounts", key: "a1", live: { name: "x" }, replayed: { name: "y" } }],
        durationMs: 200,
        eventsPerSecond: 50,
        tables: { accounts: 1 },
        repaired: { accounts: { written: 1, deleted: 0 } },
        caughtUp: 2,
        pauseMs: 7
      },
      "apply"
    )
    assert.include(text, "Projections rebuilt in place (10 events, 1 accounts); 1 differing row repaired.")
    assert.include(text, 'accounts a1: live {"name":"x"}, replayed {"name":"y"}')
    assert.include(text, "writers paused 7 ms, 2 events caught up under the lock")
    assert.include(text, "TABLE     ROWS  REWRITTEN  DELETED")
  })
})
