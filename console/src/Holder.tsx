import { useState } from "preact/hooks"
import { type Client, type KeyBalance, subtractMoney, type UsageLine, type Video } from "./api.ts"
import { UsageChart } from "./UsageChart.tsx"
import { isRunning, Progress, VideoList, VideoPlayer } from "./Videos.tsx"
import { type Async, Card, ErrorBox, Loading, Money, useAsync, useInterval } from "./ui.tsx"

export const useKeyBalance = (api: Client) => useAsync(() => api.json<KeyBalance>("/v1/balance"), [api])

export const BalanceCard = ({ balance }: { balance: Async<KeyBalance> }) => (
  <Card title="Your balance">
    {balance.error !== undefined ? (
      <ErrorBox error={balance.error} retry={balance.reload} />
    ) : balance.data === undefined ? (
      <Loading />
    ) : (
      <dl class="stats" data-testid="holder-balance">
        <div>
          <dt>Available</dt>
          <dd>
            <Money value={balance.data.available} testId="holder-available" />
          </dd>
        </div>
        <div>
          <dt>Held</dt>
          <dd>
            <Money value={balance.data.held} />
          </dd>
        </div>
        <div>
          <dt>This key spent</dt>
          <dd>
            <Money value={balance.data.key.spent} testId="holder-key-spent" />
          </dd>
        </div>
        <div>
          <dt>Key limit</dt>
          <dd>{balance.data.key.spendLimit === null ? "no limit" : <Money value={balance.data.key.spendLimit} />}</dd>
        </div>
      </dl>
    )}
  </Card>
)

export const HolderOverview = ({ api, balance }: { api: Client; balance: Async<KeyBalance> }) => {
  const usage = useAsync(() => api.json<{ data: UsageLine[] }>("/v1/usage?groupBy=day,model"), [api])
  useInterval(balance.reload, 5000, balance.error === undefined)
  return (
    <>
      <BalanceCard balance={balance} />
      <Card title="Usage by day and model">
        {usage.error !== undefined ? (
          <ErrorBox error={usage.error} retry={usage.reload} />
        ) : usage.data === undefined ? (
          <Loading />
        ) : (
          <UsageChart lines={usage.data.data} />
        )}
      </Card>
    </>
  )
}

export const HolderVideos = ({ api }: { api: Client }) => {
  const videos = useAsync(() => api.json<{ data: Video[] }>("/v1/videos?limit=50"), [api])
  useInterval(videos.reload, 2000, isRunning(videos.data?.data))
  return (
    <Card title="Your video tasks">
      {videos.error !== undefined ? (
        <ErrorBox error={videos.error} retry={videos.reload} />
      ) : videos.data === undefined ? (
        <Loading />
      ) : (
        <VideoList api={api} videos={videos.data.data} contentPath={(id) => `/v1/videos/${id}/content`} />
      )}
    </Card>
  )
}

// ---------- playground ----------

type Mode = "chat" | "image" | "video"

interface Outcome {
  readonly mode: Mode
  readonly text?: string
  readonly images?: ReadonlyArray<string>
  readonly charge?: string
}

const DATA_IMAGE = /data:image\/(?:png|jpeg|webp);base64,[A-Za-z0-9+/=]+/g
// A chat-style image model inlines each picture as markdown: the text keeps the words, the pictures are shown.
const MARKDOWN_IMAGE = /!\[[^\]]*\]\(data:image\/[^)]+\)/g

const kindOf = (id: string): Mode | "other" =>
  /video|sora/.test(id) ? "video" : /^img/.test(id) ? "image" : /embed|transcri|tts|whisper/.test(id) ? "other" : "chat"

export const Playground = ({ api, balance }: { api: Client; balance: Async<KeyBalance> }) => {
  const models = useAsync(() => api.json<{ data: { id: string }[] }>("/v1/models"), [api])
  const [mode, setMode] = useState<Mode>("chat")
  const [model, setModel] = useState<Record<Mode, string>>({ chat: "", image: "", video: "" })
  const [prompt, setPrompt] = useState("Hello! What can you do?")
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | null>(null)
  const [error, setError] = useState<unknown>(undefined)
  const [video, setVideo] = useState<Video | null>(null)
  const ids = (models.data?.data ?? []).map((m) => m.id)
  const options = ids.filter((id) => kindOf(id) === mode)
  const chosen = model[mode] || options[0] || ""

  const spent = async () => (await api.json<KeyBalance>("/v1/balance")).key.spent

  // The charge is the exact difference of the key's spend before and after the call (settled before the reply).
  const charged = async <T,>(call: () => Promise<T>): Promise<{ value: T; charge: string }> => {
    const before = await spent()
    const value = await call()
    const charge = subtractMoney(await spent(), before)
    balance.reload()
    return { value, charge }
  }

  // Live progress: poll the task while it runs, then refresh the balance once it settles.
  useInterval(
    async () => {
      if (video === null) return
      try {
        const next = await api.json<Video>(`/v1/videos/${video.id}`)
        setVideo(next)
        if (next.status === "completed" || next.status === "failed") balance.reload()
      } catch (e) {
        setError(e)
      }
    },
    1000,
    video !== null && (video.status === "queued" || video.status === "in_progress")
  )

  const send = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    setOutcome(null)
    try {
      if (mode === "video") {
        setVideo(null)
        const created = await api.json<Video>("/v1/videos", {
          body: { model: chosen, prompt, seconds: "4", metadata: { resolution: "480p", ratio: "16:9" } }
        })
        setVideo(created)
        balance.reload()
      } else if (chosen.startsWith("imggen")) {
        const { value, charge } = await charged(() =>
          api.json<{ data: { b64_json: string }[] }>("/v1/images/generations", {
            body: { model: chosen, prompt, size: "1024x1024", quality: "low" }
          })
        )
        setOutcome({ mode, images: value.data.map((d) => `data:image/png;base64,${d.b64_json}`), charge })
      } else {
        const { value, charge } = await charged(() =>
          api.json<{ choices: { message: { content: string | null } }[] }>("/v1/chat/completions", {
            body: { model: chosen, messages: [{ role: "user", content: prompt }], max_tokens: 200 }
          })
        )
        const content = value.choices[0]?.message.content ?? ""
        const images = content.match(DATA_IMAGE) ?? []
        setOutcome({ mode, text: content.replace(MARKDOWN_IMAGE, "").replace(DATA_IMAGE, "").trim(), images, charge })
      }
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }

  return (
    <Card title="Playground">
      <div class="segmented" role="tablist" aria-label="Playground mode">
        {(["chat", "image", "video"] as const).map((m) => (
          <button
            key={m}
            type="button"
            role="tab"
            aria-selected={mode === m}
            onClick={() => {
              setMode(m)
              setOutcome(null)
              setError(undefined)
              setPrompt(
                m === "chat"
                  ? "Hello! What can you do?"
                  : m === "image"
                    ? "Generate an image: a lighthouse at dusk"
                    : "A red fox trotting through fresh snow"
              )
            }}
          >
            {m === "chat" ? "Chat" : m === "image" ? "Image" : "Video"}
          </button>
        ))}
      </div>
      {models.error !== undefined ? (
        <ErrorBox error={models.error} retry={models.reload} />
      ) : models.data === undefined ? (
        <Loading label="Loading models…" />
      ) : options.length === 0 ? (
        <p class="state state-empty">This key may not use any {mode} model.</p>
      ) : (
        <form class="stack-form" onSubmit={send}>
          <label>
            Model
            <select
              name="playground-model"
              value={chosen}
              onChange={(e) => setModel({ ...model, [mode]: e.currentTarget.value })}
            >
              {options.map((id) => (
                <option key={id}>{id}</option>
              ))}
            </select>
          </label>
          <label>
            {mode === "chat" ? "Message" : "Prompt"}
            <textarea
              name="playground-prompt"
              rows={3}
              required
              value={prompt}
              onInput={(e) => setPrompt(e.currentTarget.value)}
            />
          </label>
          {mode === "video" && (
            <p class="muted small">
              A 4-second 480p 16:9 clip. The hold is released to the exact charge on completion.
            </p>
          )}
          <button type="submit" disabled={busy || chosen === ""}>
            {busy ? "Sending…" : mode === "chat" ? "Send" : mode === "image" ? "Generate image" : "Submit video"}
          </button>
        </form>
      )}
      {busy && <Loading label={mode === "image" ? "Drawing…" : "Waiting for the model…"} />}
      {error !== undefined && <ErrorBox error={error} />}
      {outcome !== null && (
        <div class="outcome" data-testid="playground-result">
          {outcome.text && <p class="reply">{outcome.text}</p>}
          {(outcome.images ?? []).map((src, i) => (
            <img
              key={src.slice(-32)}
              src={src}
              alt={`Model output ${i + 1}`}
              class="generated"
              data-testid="generated-image"
            />
          ))}
          <p class="charge">
            Charged <Money value={outcome.charge} testId="playground-charge" />
          </p>
        </div>
      )}
      {mode === "video" && video !== null && (
        <div class="outcome" data-testid="playground-video" data-status={video.status}>
          <p>
            Task <span class="mono small">{video.id}</span>: {video.status.replace("_", " ")}
          </p>
          {video.status === "completed" ? (
            <>
              <VideoPlayer api={api} path={`/v1/videos/${video.id}/content`} />
              <p class="charge">
                Charged <Money value={video.charge.captured} testId="playground-charge" /> (held{" "}
                <Money value={video.charge.held} />, refunded <Money value={video.charge.refunded} />)
              </p>
            </>
          ) : video.status === "failed" ? (
            <p class="state-error">{video.error?.message ?? "failed"}: nothing was charged.</p>
          ) : (
            <>
              <Progress value={video.progress} />
              <p class="muted small">
                Held <Money value={video.charge.held} /> until it completes.
              </p>
            </>
          )}
        </div>
      )}
    </Card>
  )
}
