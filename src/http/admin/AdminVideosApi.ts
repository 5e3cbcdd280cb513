/**
 * An account's video tasks for the operator: `GET /admin/accounts/{id}/videos` (the `/v1/videos` list shape and
 * cursor) and `GET /admin/accounts/{id}/videos/{videoId}/content` (the stored MP4, `Range` supported).
 */
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { Accounts } from "../../app/Accounts.ts"
import { route } from "../Route.ts"
import { downloadFor, listFor } from "../VideosApi.ts"
import { admin } from "./AdminApi.ts"

const params = Effect.map(HttpRouter.params, (p) => ({ accountId: p.id ?? "", videoId: p.videoId ?? "" }))

const list = admin(
  Effect.gen(function* () {
    const { accountId } = yield* params
    // An unknown account is a 404, not an empty list.
    yield* (yield* Accounts).get(accountId)
    return yield* listFor(accountId)
  })
)

const content = admin(
  Effect.gen(function* () {
    const { accountId, videoId } = yield* params
    return yield* downloadFor(accountId, videoId)
  })
)

export const layer = Layer.mergeAll(
  route("GET", "/admin/accounts/:id/videos", list),
  route("GET", "/admin/accounts/:id/videos/:videoId/content", content)
)
