/**
 * `POST /admin/audit/verify`: recomputes every stream's hash chain and the global chain through every checkpoint,
 * and records a new checkpoint when the history is intact. `POST /admin/audit/checkpoint` only extends the chain.
 */
import { Effect, Layer } from "effect"
import { Audit } from "../../app/Audit.ts"
import { json, route } from "../Route.ts"
import { admin } from "./AdminApi.ts"

export const layer = Layer.mergeAll(
  route(
    "POST",
    "/admin/audit/verify",
    admin(
      Effect.flatMap(
        Effect.flatMap(Audit, (audit) => audit.verify),
        (report) => Effect.succeed(json(report))
      )
    )
  ),
  route(
    "POST",
    "/admin/audit/checkpoint",
    admin(
      Effect.flatMap(
        Effect.flatMap(Audit, (audit) => audit.checkpoint),
        (checkpoint) => Effect.succeed(json({ checkpoint }))
      )
    )
  )
)
