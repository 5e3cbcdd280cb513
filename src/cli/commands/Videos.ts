/**
 * `tollgate videos`: the video API as an API user calls it (not the admin API). The key comes from
 * `TOLLGATE_API_KEY`, never from the command line.
 */
import { Console, Duration, Effect, Option, Schedule } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import {
  DEFAULT_VIDEO_RATIO,
  DEFAULT_VIDEO_RESOLUTION,
  DEFAULT_VIDEO_SECONDS,
  MAX_VIDEO_CLIPS,
  MAX_VIDEO_IMAGES,
  MAX_VIDEO_SECONDS,
  MIN_VIDEO_SECONDS,
  VIDEO_RATIOS,
  VIDEO_RESOLUTIONS
} from "../../domain/video/VideoSpec.ts"
import { isVideoInputLink, MAX_VIDEO_PROMPT_CHARS } from "../../domain/video/VideoSubmit.ts"
import { UnexpectedResponse } from "../CliErrors.ts"
import { JsonOutput } from "../CliSettings.ts"
import { printJson } from "../Output.ts"
import { nonBlankFlag, pageFlags } from "../Params.ts"
import { type VideoAnswer, VideoApi, type VideoApiShape, VideoFailed, type VideoTask } from "./VideosClient.ts"
import {
  chargeLine,
  defaultVideoModel,
  failureOf,
  savedLine,
  submittedHint,
  videoCreateBody,
  videoListView,
  videoTaskView
} from "./VideosView.ts"
import { type ProgressDisplay, progressDisplay } from "./VideosProgress.ts"

const inlineRefused = "a publicly reachable URL (inline base64 data: URIs are not supported for video inputs)"

/** A repeatable link flag, each value checked by the server's own rule, so a bad link is a usage error. */
const linkFlag = (name: string, field: "images" | "videos", expected: string, max: number) =>
  Flag.String(name).pipe(
    Flag.withMetavar("URL"),
    Flag.filterMap(
      (input) => (isVideoInputLink(field, input.trim()) ? Option.some(input.trim()) : Option.none()),
      (input) => (/^\s*data:/i.test(input) ? inlineRefused : expected)
    ),
    Flag.between(0, max)
  )

export const videoCreateFlags = {
  prompt: Flag.String("prompt").pipe(
    Flag.withDescription("What the video shows"),
    Flag.filter(
      (prompt) => prompt.trim() !== "" && [...prompt].length <= MAX_VIDEO_PROMPT_CHARS,
      () => `a non-blank prompt of at most ${MAX_VIDEO_PROMPT_CHARS} characters`
    )
  ),
  model: nonBlankFlag("model").pipe(
    Flag.withDescription(`The video model (default ${defaultVideoModel}; video-model-2.0 for higher quality)`),
    Flag.withDefault(defaultVideoModel)
  ),
  seconds: Flag.Int("seconds").pipe(
    Flag.withDescription(
      `Length in seconds, ${MIN_VIDEO_SECONDS} to ${MAX_VIDEO_SECONDS} (default ${DEFAULT_VIDEO_SECONDS})`
    ),
    Flag.filter(
      (seconds) => seconds >= MIN_VIDEO_SECONDS && seconds <= MAX_VIDEO_SECONDS,
      () => `a whole number of seconds from ${MIN_VIDEO_SECONDS} to ${MAX_VIDEO_SECONDS}`
    ),
    Flag.withDefault(DEFAULT_VIDEO_SECONDS)
  ),
  resolution: Flag.Literals("resolution", VIDEO_RESOLUTIONS).pipe(
    Flag.withDescription(`Output resolution (default ${DEFAULT_VIDEO_RESOLUTION})`),
    Flag.withDefault(DEFAULT_VIDEO_RESOLUTION)
  ),
  ratio: Flag.Literals("ratio", VIDEO_RATIOS).pipe(
    Flag.withDescription(`Aspect ratio (default ${DEFAULT_VIDEO_RATIO})`),
    Flag.withDefault(DEFAULT_VIDEO_RATIO)
  ),
  images: linkFlag("image", "images", "an http(s) URL of a JPG, PNG or WebP image", MAX_VIDEO_IMAGES).pipe(
    Flag.withDescription(
      `A public image URL; repeat for several (at most ${MAX_VIDEO_IMAGES}; exactly 2 = first and last frame)`
    )
  ),
  videos: linkFlag("video", "videos", "an http(s) URL of an MP4 video", MAX_VIDEO_CLIPS).pipe(
    Flag.withDescription(`A public MP4 reference clip URL; repeat for several (at most ${MAX_VIDEO_CLIPS})`)
  ),
  wait: Flag.Boolean("wait").pipe(
    Flag.withDescription("Follow the task with a progress bar, then download the video"),
    Flag.withDefault(false)
  ),
  out: nonBlankFlag("out").pipe(
    Flag.withMetavar("file"),
    Flag.withDescription("Where --wait saves the MP4 (default <id>.mp4; implies --wait)"),
    Flag.optional
  ),
  pollInterval: Flag.Int("poll-interval").pipe(
    Flag.withMetavar("ms"),
    Flag.withDescription("Milliseconds between polls with --wait (default 2000)"),
    Flag.filter(
      (ms) => ms >= 100,
      () => "at least 100 milliseconds"
    ),
    Flag.withDefault(2000)
  )
}

const terminal = (status: string) => status === "completed" || status === "failed"
const followable = (status: string) => status === "queued" || status === "in_progress"

// A dropped connection while waiting should not throw away a task the user is paying for.
const pollRetry = Schedule.exponential(Duration.millis(500))

/** Polls until the task is completed or failed, showing its progress; answers the final poll. */
export const followTask = Effect.fn("videos.follow")(function* (
  api: VideoApiShape,
  first: VideoTask,
  interval: Duration.Duration,
  display: ProgressDisplay
) {
  let task = first
  let answer: VideoAnswer<VideoTask> | undefined
  while (answer === undefined || !terminal(task.status)) {
    if (!followable(task.status) && !terminal(task.status)) {
      return yield* new UnexpectedResponse({
        url: api.url,
        status: 200,
        detail: `unknown video status '${task.status}'`
      })
    }
    yield* display.update(task.status, task.progress ?? 0)
    yield* Effect.sleep(interval)
    answer = yield* api
      .get(first.id)
      .pipe(Effect.retry({ schedule: pollRetry, times: 4, while: (error) => error._tag === "ServerUnreachable" }))
    task = answer.value
  }
  if (task.status === "completed") yield* display.update(task.status, 100)
  return answer
})

const create = Command.make(
  "create",
  videoCreateFlags,
  Effect.fn("videos.create")(function* (flags) {
    const api = yield* VideoApi
    const json = yield* JsonOutput
    const submitted = yield* api.submit(videoCreateBody(flags))
    const id = submitted.value.id
    const wait = flags.wait || Option.isSome(flags.out)
    if (!wait) {
      if (json) return yield* printJson(submitted.body)
      yield* Console.log(id)
      return yield* Console.error(submittedHint(id))
    }
    // The id first, on stderr under --json: with it a user can pick the task up again if the wait is interrupted.
    yield* json ? Console.error(id) : Console.log(id)
    const final = yield* Effect.scoped(
      Effect.flatMap(progressDisplay(id), (display) =>
        followTask(api, submitted.value, Duration.millis(flags.pollInterval), display)
      )
    )
    const task = final.value
    const charge = chargeLine(task.charge)
    if (task.status === "failed") {
      if (json) yield* printJson(final.body)
      if (charge !== undefined) yield* Console.error(charge)
      const { reason, code } = failureOf(task)
      return yield* new VideoFailed({ id, reason, code })
    }
    const path = Option.getOrElse(flags.out, () => `${id}.mp4`)
    const bytes = yield* api.download(id, path)
    if (json) {
      yield* printJson(final.body)
      return yield* Console.error(savedLine(path, bytes))
    }
    yield* Console.log(savedLine(path, bytes))
    if (charge !== undefined) yield* Console.log(charge)
  })
).pipe(
  Command.withDescription("Submit a video task (POST /v1/videos); with --wait, follow it and download the MP4"),
  Command.withExamples([
    {
      command: 'tollgate videos create --prompt "a fox in the snow" --resolution 480p --seconds 5 --wait --out fox.mp4',
      description: "A small clip, followed to the end and saved"
    },
    {
      command:
        "tollgate videos create --prompt 'dawn to dusk' --image https://x.example/a.png --image https://x.example/b.png",
      description: "First and last frame"
    }
  ]),
  Command.provide(VideoApi.layer)
)

const get = Command.make(
  "get",
  { id: Argument.String("id").pipe(Argument.withDescription("The video task id")) },
  Effect.fn("videos.get")(function* ({ id }) {
    const answer = yield* (yield* VideoApi).get(id)
    yield* (yield* JsonOutput) ? printJson(answer.body) : Console.log(videoTaskView(answer.value))
  })
).pipe(Command.withDescription("Show a video task (GET /v1/videos/{id})"), Command.provide(VideoApi.layer))

const list = Command.make(
  "list",
  {
    ...pageFlags("Tasks", "task id")
  },
  Effect.fn("videos.list")(function* ({ limit, after }) {
    const answer = yield* (yield* VideoApi).list({
      limit: Option.getOrUndefined(limit),
      after: Option.getOrUndefined(after)
    })
    yield* (yield* JsonOutput) ? printJson(answer.body) : Console.log(videoListView(answer.value))
  })
).pipe(
  Command.withDescription("List your video tasks, newest first (GET /v1/videos)"),
  Command.withAlias("ls"),
  Command.provide(VideoApi.layer)
)

export const videos = Command.make("videos").pipe(
  Command.withDescription("Generate videos with an API key from TOLLGATE_API_KEY (the public /v1/videos API)"),
  Command.withSubcommands([create, get, list])
)
