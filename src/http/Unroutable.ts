/**
 * A request the router cannot match because its path does not decode (`%ED%A0%80`, the bytes of a lone surrogate,
 * or `%FF`) gets a 400 in the envelope of the protocol called instead of the platform's empty 404; any other
 * unmatched request the same 404 as an unknown path.
 */
import { Effect, Result } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest } from "effect/http"
import { badRequest, notFound } from "./ApiError.ts"
import { respond } from "./Route.ts"

export const unroutableLayer = HttpRouter.middleware(
  (httpEffect) =>
    // Every other failure goes on as it was: only the router's "no route" is answered here.
    Effect.catch(httpEffect, (error) =>
      HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"
        ? respond(unroutable)
        : Effect.fail(error)
    ),
  { global: true }
)

const unroutable = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const path = new URL(request.url, "http://x").pathname
  return Result.isFailure(Result.try(() => decodeURI(path)))
    ? Effect.fail(badRequest(`the path ${path} is not valid percent-encoded UTF-8`, "path", "invalid_parameter"))
    : Effect.fail(notFound(`unknown path ${request.method} ${path}`, "unknown_path"))
})
