import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from "chart.js"
import { useEffect, useRef, useState } from "preact/hooks"
import type { UsageLine } from "./api.ts"
import { Empty } from "./ui.tsx"

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip)

const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#db2777", "#7c3aed", "#0891b2", "#dc2626", "#4b5563"]

type Metric = "cost" | "tokens"

/**
 * Usage by day, one stacked bar per model. The chart plots numbers, so costs are converted for drawing only; the
 * tooltip and the table underneath show the exact decimal strings from the API.
 */
export const UsageChart = ({ lines }: { lines: ReadonlyArray<UsageLine> }) => {
  const canvas = useRef<HTMLCanvasElement>(null)
  const [metric, setMetric] = useState<Metric>("cost")
  const days = [...new Set(lines.map((l) => l.day ?? ""))].sort()
  const models = [...new Set(lines.map((l) => l.model ?? "all"))].sort()
  useEffect(() => {
    if (canvas.current === null || lines.length === 0) return
    const find = (day: string, model: string) =>
      lines.find((l) => (l.day ?? "") === day && (l.model ?? "all") === model)
    const chart = new Chart(canvas.current, {
      type: "bar",
      data: {
        labels: days,
        datasets: models.map((model, i) => ({
          label: model,
          backgroundColor: PALETTE[i % PALETTE.length],
          maxBarThickness: 56,
          data: days.map((day) => {
            const line = find(day, model)
            if (line === undefined) return 0
            return metric === "cost" ? Number(line.cost) : line.inputTokens + line.outputTokens
          })
        }))
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } },
        plugins: {
          legend: { position: "bottom" },
          tooltip: {
            callbacks: {
              label: (item) => {
                const line = find(String(item.label), String(item.dataset.label))
                if (line === undefined) return `${item.dataset.label}: 0`
                return metric === "cost"
                  ? `${item.dataset.label}: $${line.cost}`
                  : `${item.dataset.label}: ${line.inputTokens} in + ${line.outputTokens} out tokens`
              }
            }
          }
        }
      }
    })
    return () => chart.destroy()
  }, [lines, metric])
  if (lines.length === 0) return <Empty>No usage yet: charges appear here once calls settle.</Empty>
  return (
    <div class="chart-block">
      <div class="segmented">
        <button type="button" aria-pressed={metric === "cost"} onClick={() => setMetric("cost")}>
          Cost
        </button>
        <button type="button" aria-pressed={metric === "tokens"} onClick={() => setMetric("tokens")}>
          Tokens
        </button>
      </div>
      <div class="chart-box">
        <canvas ref={canvas} role="img" aria-label={`Usage ${metric} by day and model`} data-testid="usage-chart" />
      </div>
      <details class="chart-table">
        <summary>Show as table</summary>
        <div class="table-wrap">
          <table data-testid="usage-table">
            <thead>
              <tr>
                <th>Day</th>
                <th>Model</th>
                <th>Requests</th>
                <th>Tokens in / out</th>
                <th>Images</th>
                <th>Video s</th>
                <th>Cost</th>
              </tr>
            </thead>
            <tbody>
              {lines.map((l) => (
                <tr key={`${l.day}-${l.model}`}>
                  <td>{l.day}</td>
                  <td>{l.model}</td>
                  <td>{l.requests}</td>
                  <td>
                    {l.inputTokens} / {l.outputTokens}
                  </td>
                  <td>{l.images}</td>
                  <td>{l.videoSeconds}</td>
                  <td class="num">${l.cost}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </div>
  )
}
