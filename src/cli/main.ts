/**
 * Process entry of the `tollgate` CLI (`bin/tollgate.mjs`, `npm run cli`): real argv, env, console and exit code.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Exit, Runtime } from "effect"
import { runTollgate } from "./Tollgate.ts"

runTollgate(process.argv.slice(2)).pipe(
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // Success carries the exit code; a failure here is a defect that runTollgate did not catch.
    teardown: (exit, onExit) =>
      Exit.isSuccess(exit) && typeof exit.value === "number"
        ? onExit(exit.value)
        : Runtime.defaultTeardown(exit, onExit)
  })
)
