/**
 * Per-request video knobs written into the prompt as `[sim:…]` markers, like the image ones (ImageMarkers.ts): they
 * travel through the gateway inside the prompt, where an `x-sim-fault` header would not.
 *
 * | marker | effect at the end of the task's simulated time |
 * |---|---|
 * | `[sim:video-fail]` | Ark `failed` (`OutputVideoSensitiveContentDetected`); OpenAI `failed` (`moderation_blocked`) |
 * | `[sim:video-expire]` | Ark `expired` (`TaskExpired`); OpenAI `failed` (`video_expired`) |
 * | `[sim:video-stall]` | never ends: stays running |
 * | `[sim:video-seconds=N]` | delivers (and reports the tokens of) an N-second clip whatever was asked, as a model that
 *   chooses its own length does |
 * | `[sim:video-404=N]` | (from submit on) the first N reads of the task (`GET` of the task) answer 404 as for an unknown
 *   task, as a vendor whose replicas have not seen a task just created yet does |
 */

export type VideoOutcome = "succeed" | "fail" | "expire" | "stall"

const MARKER = /\[sim:(video-fail|video-expire|video-stall)\]/i

/** The outcome the prompt asks for; when several markers are given the first one wins. */
export const videoOutcome = (prompt: string): VideoOutcome => {
  switch (MARKER.exec(prompt)?.[1]?.toLowerCase()) {
    case "video-fail":
      return "fail"
    case "video-expire":
      return "expire"
    case "video-stall":
      return "stall"
    default:
      return "succeed"
  }
}

const UNSEEN = /\[sim:video-404=(\d{1,3})\]/i

/** How many reads of the task answer 404 before the vendor knows it (0 without the marker). */
export const unseenReads = (prompt: string): number => {
  const match = UNSEEN.exec(prompt)
  return match === null ? 0 : Number(match[1])
}

const SECONDS = /\[sim:video-seconds=(\d{1,2})\]/i

/** The clip length actually delivered: the marker's, when the prompt carries one, else the requested length. */
export const deliveredSeconds = (prompt: string, requested: number): number => {
  const match = SECONDS.exec(prompt)
  return match === null ? requested : Math.max(1, Number(match[1]))
}
