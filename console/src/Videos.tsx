import { useEffect, useState } from "preact/hooks"
import type { Client, Video } from "./api.ts"
import { Empty, ErrorBox, Loading, Money, StatusBadge } from "./ui.tsx"

/** The MP4 is fetched with the secret in a header and played from a blob: URL, so no secret goes in a src. */
export const VideoPlayer = ({ api, path }: { api: Client; path: string }) => {
  const [url, setUrl] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(undefined)
  useEffect(() => {
    let object: string | null = null
    let cancelled = false
    api.blob(path).then(
      (blob) => {
        if (cancelled) return
        object = URL.createObjectURL(blob)
        setUrl(object)
      },
      (e: unknown) => !cancelled && setError(e)
    )
    return () => {
      cancelled = true
      if (object !== null) URL.revokeObjectURL(object)
    }
  }, [api, path])
  if (error !== undefined) return <ErrorBox error={error} />
  if (url === null) return <Loading label="Loading video…" />
  // biome-ignore lint/a11y/useMediaCaption: generated clips come with no caption track to offer
  return <video class="player" src={url} controls playsInline preload="auto" data-testid="video-player" />
}

export const Progress = ({ value }: { value: number }) => (
  <div class="progress" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={value}>
    <div class="progress-bar" style={{ width: `${value}%` }} />
    <span class="progress-label">{value}%</span>
  </div>
)

export const VideoCard = ({ api, video, contentPath }: { api: Client; video: Video; contentPath: string }) => (
  <article class="video-card" data-testid="video-card" data-status={video.status}>
    <header>
      <StatusBadge status={video.status} />
      <span class="muted">{video.model}</span>
      <span class="muted">
        {video.size} · {video.seconds}s
      </span>
    </header>
    <p class="prompt">{video.prompt}</p>
    {video.status === "completed" ? (
      <VideoPlayer api={api} path={contentPath} />
    ) : video.status === "failed" ? (
      <p class="state-error">{video.error?.message ?? "failed"}</p>
    ) : (
      <Progress value={video.progress} />
    )}
    <p class="muted small">
      Held <Money value={video.charge.held} />
      {video.charge.captured !== null && (
        <>
          {" "}
          · charged <Money value={video.charge.captured} testId="video-charge" />
        </>
      )}
      {video.charge.refunded !== null && (
        <>
          {" "}
          · refunded <Money value={video.charge.refunded} />
        </>
      )}
    </p>
  </article>
)

export const VideoList = ({
  api,
  videos,
  contentPath
}: {
  api: Client
  videos: ReadonlyArray<Video>
  contentPath: (id: string) => string
}) =>
  videos.length === 0 ? (
    <Empty>No video tasks yet.</Empty>
  ) : (
    <div class="video-grid">
      {videos.map((v) => (
        <VideoCard key={v.id} api={api} video={v} contentPath={contentPath(v.id)} />
      ))}
    </div>
  )

export const isRunning = (videos: ReadonlyArray<Video> | undefined) =>
  (videos ?? []).some((v) => v.status === "queued" || v.status === "in_progress")
