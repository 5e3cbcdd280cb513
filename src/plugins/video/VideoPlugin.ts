/**
 * The built-in video family (`video`): asynchronous generation tasks on two upstream protocols, Ark's Seedance tasks
 * (`ark`) and the OpenAI Videos API (`openai-videos`). The gateway owns the task; this plugin creates it upstream
 * (trying the model's upstreams in order while nothing was accepted), polls it on the upstream that took it, and
 * streams the finished file. Input images and clips stay links: the vendors fetch them themselves.
 */
import { Effect, Result } from "effect"
import type { UpstreamClient, UpstreamResponse } from "../../adapters/upstream/UpstreamClient.ts"
import { ArkPaths, OpenAiPaths, upstreamUrl } from "../../adapters/upstream/UpstreamEndpoints.ts"
import type { UpstreamError } from "../../adapters/upstream/UpstreamError.ts"
import type { UpstreamConfig, PriceKeys } from "../ModelPlugin.ts"
import type { GuardedFetcher } from "../../app/ports/GuardedFetcher.ts"
import {
  type PluginFailure,
  pluginFailure,
  type VideoCall,
  type VideoDownload,
  type VideosPlugin,
  type VideoTaskRef,
  type VideoUpstreamStatus
} from "../ModelPlugin.ts"
import { failureFromUpstream } from "../UpstreamFailure.ts"
import { arkCreateBody, arkStatus, arkTaskId } from "./ArkTasks.ts"
import { contentLengthOf, contentTypeOf, downloadLink } from "./LinkDownload.ts"
import { openAiVideoId, openAiVideoStatus, openAiVideosCreateBody, openAiVideosRefusal } from "./OpenAiVideos.ts"
import { videoPricing } from "./VideoPricing.ts"
import { traced } from "../../app/Traced.ts"

export const VIDEO_PLUGIN_ID = "video"

type VideoProtocol = "ark" | "openai-videos"

const isVideoProtocol = (protocol: string): protocol is VideoProtocol =>
  protocol === "ark" || protocol === "openai-videos"

/**
 * A failure worth trying the next upstream for: the upstream certainly accepted nothing (it refused the connection or
 * answered with an error status). A timeout or a connection lost after the request was sent is ambiguous — the task
 * may exist there — so it is not sent elsewhere; the worker retries later, on the same order of upstreams.
 */
const tryNext = (error: UpstreamError): boolean => {
  const reason = error.reason
  if (reason._tag === "HttpStatus") return reason.status === 401 || reason.status === 403 || reason.isRetryable
  return reason._tag === "ConnectFailed"
}

/** {@link failureFromUpstream}, keeping any `retry-after` the upstream sent so the poller can back off. */
const withRetryAfter = (error: UpstreamError): PluginFailure => {
  const failure = failureFromUpstream(error)
  const reason = error.reason
  return reason._tag === "HttpStatus" && reason.retryAfter !== undefined && failure.retryAfterSeconds === undefined
    ? { ...failure, retryAfterSeconds: reason.retryAfter }
    : failure
}

/** A download is the gateway's own request: an upstream's 4xx there is not the client's doing. */
const downloadFailure = (error: UpstreamError): PluginFailure => {
  const failure = withRetryAfter(error)
  return failure.reason === "invalid_request"
    ? { ...failure, reason: "unavailable", message: `the upstream refused the video download: ${failure.message}` }
    : failure
}

const fromResult = <A>(result: Result.Result<A, PluginFailure>): Effect.Effect<A, PluginFailure> =>
  Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(result.failure)

const json = (response: UpstreamResponse) => response.body.json

/** The `Idempotency-Key` of a gateway task's upstream create: stable across workers and retries. */
export const videoIdempotencyKey = (taskId: string): string => `tollgate-${taskId}`

/**
 * An optional capability of a videos plugin (not yet part of the contract in ModelPlugin.ts): cancelling an upstream
 * task the gateway created but will not follow. The worker calls it when it finds one, if the plugin has it.
 */
export interface CancelsVideoTasks {
  readonly cancel: (task: VideoTaskRef) => Effect.Effect<void, PluginFailure>
}

/** The prices this family bills by (the operator config may set no others). */
export const VIDEO_PRICE_KEYS: PriceKeys = { allowed: ["output"], required: ["output"] }

/**
 * `links` is the gateway's guarded fetcher: a finished video is downloaded from the vendor's link through it. Video
 * inputs are passed to the vendors as links (checked at submit, VideoInputLinks.ts), never fetched here.
 */
export const makeVideoPlugin = (
  client: UpstreamClient["Service"],
  links: GuardedFetcher["Service"]
): VideosPlugin & CancelsVideoTasks => {
  const send = (upstream: UpstreamConfig & { readonly protocol: VideoProtocol }, call: VideoCall) => {
    const ark = upstream.protocol === "ark"
    const body = ark
      ? arkCreateBody(call.request, call.model.upstreamModel)
      : openAiVideosCreateBody(call.request, call.model.upstreamModel)
    return client
      .request({
        upstream,
        method: "POST",
        path: ark ? ArkPaths.tasks : OpenAiPaths.videos,
        // OpenAI honours `Idempotency-Key`: a create retried for the same gateway task (a worker that died or timed
        // out after sending it) returns the video the first call made instead of a second one. Ark has no such key.
        ...(ark ? {} : { headers: { "idempotency-key": videoIdempotencyKey(call.taskId) } }),
        body: JSON.stringify(body),
        signal: call.signal
      })
      .pipe(Effect.flatMap(json))
  }

  /** The model's video upstreams that can express the request, or why none can (decided before any call). */
  const ableUpstreams = (request: VideoCall["request"], model: VideoCall["model"]) => {
    const candidates = model.upstreams.flatMap((upstream, index) =>
      isVideoProtocol(upstream.protocol)
        ? [{ upstream: upstream as UpstreamConfig & { readonly protocol: VideoProtocol }, index }]
        : []
    )
    if (candidates.length === 0) {
      return Result.fail(
        pluginFailure("misconfigured", `model ${model.id} has no ark or openai-videos upstream configured`)
      )
    }
    // An upstream that cannot express the request is skipped, not tried and refused.
    const refusals = candidates.map(({ upstream }) =>
      upstream.protocol === "openai-videos" ? openAiVideosRefusal(request, upstream.name) : undefined
    )
    const able = candidates.filter((_, position) => refusals[position] === undefined)
    const firstRefusal = refusals.find((refusal) => refusal !== undefined)
    return able.length === 0 && firstRefusal !== undefined ? Result.fail(firstRefusal) : Result.succeed(able)
  }

  const check = (request: VideoCall["request"], model: VideoCall["model"]): PluginFailure | undefined => {
    const able = ableUpstreams(request, model)
    return Result.isFailure(able) ? able.failure : undefined
  }

  const create = Effect.fnUntraced(function* (call: VideoCall) {
    const able = yield* fromResult(ableUpstreams(call.request, call.model))
    let last: PluginFailure = pluginFailure("unavailable", "no upstream answered")
    for (const { upstream, index } of able) {
      const outcome = yield* Effect.result(send(upstream, call))
      if (Result.isSuccess(outcome)) {
        const id = yield* fromResult(
          upstream.protocol === "ark" ? arkTaskId(outcome.success) : openAiVideoId(outcome.success)
        )
        return { upstreamTaskId: id, upstreamIndex: index }
      }
      last = withRetryAfter(outcome.failure)
      if (!tryNext(outcome.failure)) break
      yield* Effect.logWarning("video upstream failed, trying the next one").pipe(
        Effect.annotateLogs({ upstream: upstream.name, model: call.model.id, reason: last.reason })
      )
    }
    return yield* Effect.fail(last)
  }, traced("VideoPlugin.create"))

  /** The upstream that took the task; a task can only be followed where it was created. */
  const upstreamOf = (
    task: VideoTaskRef
  ): Effect.Effect<UpstreamConfig & { readonly protocol: VideoProtocol }, PluginFailure> => {
    const upstream = task.model.upstreams[task.upstreamIndex]
    return upstream !== undefined && isVideoProtocol(upstream.protocol)
      ? Effect.succeed(upstream as UpstreamConfig & { readonly protocol: VideoProtocol })
      : Effect.fail(
          pluginFailure(
            "misconfigured",
            `model ${task.model.id} has no video upstream at index ${task.upstreamIndex}: the operator config changed under a running task`
          )
        )
  }

  const poll = Effect.fnUntraced(function* (task: VideoTaskRef) {
    const upstream = yield* upstreamOf(task)
    const ark = upstream.protocol === "ark"
    const outcome = yield* Effect.result(
      client
        .request({
          upstream,
          method: "GET",
          path: ark ? ArkPaths.task(task.upstreamTaskId) : OpenAiPaths.video(task.upstreamTaskId),
          signal: task.signal
        })
        .pipe(Effect.flatMap(json))
    )
    if (Result.isFailure(outcome)) {
      const reason = outcome.failure.reason
      if (reason._tag === "HttpStatus" && reason.status === 404) {
        // Not final by itself: the worker polls a few more times before it fails the task (VideoTasks.ts).
        return {
          _tag: "Failed",
          reason: "expired",
          code: "upstream_task_missing",
          message: `the upstream ${upstream.name} no longer knows task ${task.upstreamTaskId}`
        } satisfies VideoUpstreamStatus
      }
      return yield* Effect.fail(withRetryAfter(outcome.failure))
    }
    return yield* fromResult(
      ark
        ? arkStatus(outcome.success)
        : openAiVideoStatus(outcome.success, upstreamUrl(upstream, OpenAiPaths.videoContent(task.upstreamTaskId)))
    )
  }, traced("VideoPlugin.poll"))

  const download = Effect.fnUntraced(function* (task: VideoTaskRef, videoUrl: string) {
    const upstream = yield* upstreamOf(task)
    if (upstream.protocol === "ark") {
      return yield* downloadLink(links, videoUrl, {
        upstreamName: upstream.name,
        upstreamBaseUrl: upstream.baseUrl,
        headersTimeoutMs: upstream.timeoutMs,
        idleTimeoutMs: upstream.idleTimeoutMs,
        signal: task.signal
      })
    }
    const response = yield* client
      .request({
        upstream,
        method: "GET",
        // Built from the task id, not taken from `videoUrl`: the API key only ever goes to this one path.
        path: OpenAiPaths.videoContent(task.upstreamTaskId),
        headers: { accept: "application/binary" },
        signal: task.signal
      })
      .pipe(Effect.mapError(downloadFailure))
    return {
      contentType: contentTypeOf(response.headers),
      contentLength: contentLengthOf(response.headers),
      body: response.body.chunks()
    } satisfies VideoDownload
  }, traced("VideoPlugin.download"))

  /**
   * Cancels (or deletes) an upstream task the gateway will not follow: the create of a worker that lost the race to
   * record its dispatch. Ark cancels a queued task and refuses a running one (409); OpenAI deletes the video.
   */
  const cancel = Effect.fnUntraced(function* (task: VideoTaskRef) {
    const upstream = yield* upstreamOf(task)
    yield* client
      .request({
        upstream,
        method: "DELETE",
        path: upstream.protocol === "ark" ? ArkPaths.task(task.upstreamTaskId) : OpenAiPaths.video(task.upstreamTaskId),
        signal: task.signal
      })
      .pipe(Effect.flatMap(json), Effect.mapError(withRetryAfter))
  }, traced("VideoPlugin.cancel"))

  return {
    specificationVersion: "v1",
    id: VIDEO_PLUGIN_ID,
    family: "video",
    kind: "videos",
    pricingKeys: VIDEO_PRICE_KEYS,
    pricing: videoPricing,
    check,
    create,
    poll,
    download,
    cancel
  }
}
