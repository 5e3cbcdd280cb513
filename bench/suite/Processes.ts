/**
 * Child processes of the suite and what /proc says about them: spawning a server pinned to a core, waiting for it
 * to listen, CPU ticks (utime + stime, every thread) and resident memory, sampled while a scenario runs.
 */
import { type ChildProcess, execFileSync, fork, spawn, spawnSync } from "node:child_process"
import { openSync, readdirSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

/**
 * The gateway as `npm start` runs it: dist/gateway/main.js, built first when missing or stale
 * (scripts/build-gateway.mjs); `BENCH_GATEWAY_SCRIPT` names another checkout's entry point instead (before/after).
 */
export const startedGateway = (): string => {
  if (process.env.BENCH_GATEWAY_SCRIPT !== undefined) return process.env.BENCH_GATEWAY_SCRIPT
  return compiled("dist/gateway")
}

/**
 * `entry` compiled as `npm start`'s gateway is (scripts/build-gateway.mjs, into `outDir` under the repository, when
 * missing or stale), so a bench's variant of the gateway runs as the real one does, not through tsx's loader.
 */
export const compiled = (outDir: string, entry?: string): string => {
  const built = spawnSync(
    process.execPath,
    [
      here("../../scripts/build-gateway.mjs"),
      "--if-stale",
      "--out",
      here(`../../${outDir}`),
      ...(entry === undefined ? [] : ["--entry", entry])
    ],
    { stdio: "inherit", cwd: here("../..") }
  )
  if (built.status !== 0) throw new Error("scripts/build-gateway.mjs failed")
  return here(`../../${outDir}/main.js`)
}

const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

export const cores = (() => {
  try {
    return readFileSync("/proc/cpuinfo", "utf8").match(/^processor\s*:/gm)?.length ?? 1
  } catch {
    return 1
  }
})()

/** Pins every thread of `pid` to `core`; threads it starts later inherit the mask. */
export const pin = (pid: number, core: number): boolean => {
  if (!hasTaskset || cores < 2) return false
  try {
    execFileSync("taskset", ["-a", "-cp", String(core), String(pid)], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const children = new Set<ChildProcess>()
export const killAll = () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
}
process.on("exit", killAll)

export interface Spawned {
  readonly child: ChildProcess
  readonly pid: number
  stop(): Promise<void>
}

/** `node [--cpu-prof] [--require loopDelay.cjs] --import tsx <script>`, output to `logFile`, pinned to `core`. */
export const spawnNode = (
  script: string,
  options: { env: Record<string, string>; logFile: string; core: number; loopDelayFile?: string }
): Spawned => {
  const log = openSync(options.logFile, "a")
  const preload = options.loopDelayFile === undefined ? [] : ["--require", here("./loopDelay.cjs")]
  // BENCH_CPU_PROF_DIR: a V8 CPU profile of each server, written there when it stops (`node --cpu-prof`).
  const profileDir = process.env.BENCH_CPU_PROF_DIR
  const profile = profileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", profileDir]
  // Compiled JavaScript (the gateway `npm start` runs, dist/gateway/main.js) needs no TypeScript loader.
  const loader = script.endsWith(".ts") ? ["--import", "tsx"] : []
  // The store is the caller's to choose: a DATABASE_URL of the shell that runs the bench would put an embedded rung
  // on Postgres.
  const { DATABASE_URL: _shells, ...inherited } = process.env
  const child = spawn(process.execPath, [...profile, ...preload, ...loader, script], {
    env: {
      ...inherited,
      ...options.env,
      ...(options.loopDelayFile === undefined ? {} : { BENCH_LOOP_DELAY_FILE: options.loopDelayFile })
    },
    stdio: ["ignore", log, log]
  })
  children.add(child)
  pin(child.pid ?? 0, options.core)
  return {
    child,
    pid: child.pid ?? 0,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
        child.once("exit", () => {
          clearTimeout(timer)
          children.delete(child)
          resolve()
        })
        child.kill("SIGTERM")
      })
  }
}

/** The load generator as a forked process with IPC, pinned to `core`; `run` sends one job and awaits its result. */
export const forkGenerator = async (core: number) => {
  const child = fork(here("./LoadGenerator.ts"), [], { execArgv: ["--import", "tsx"], stdio: "inherit" })
  children.add(child)
  await new Promise<void>((resolve) => child.once("message", () => resolve()))
  const pinned = pin(child.pid ?? 0, core)
  return {
    pid: child.pid ?? 0,
    pinned,
    run: <A>(job: unknown): Promise<A> =>
      new Promise<A>((resolve, reject) => {
        child.once("message", (message: { ok: boolean; result?: A; error?: string }) => {
          if (message.ok) resolve(message.result as A)
          else reject(new Error(message.error))
        })
        child.send(job as object)
      }),
    close: () => {
      child.kill("SIGTERM")
      children.delete(child)
    }
  }
}

/** Polls `check` (each attempt cut off after 2 s: a server may accept connections before it answers). */
export const waitFor = async (check: (signal: AbortSignal) => Promise<boolean>, seconds: number, what: string) => {
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    if (await check(AbortSignal.timeout(2000)).catch(() => false)) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`${what} did not become ready within ${seconds} s`)
}

const TICK_US = 1_000_000 / 100 // USER_HZ is 100 on Linux

/** utime + stime of the whole process, in µs. */
export const cpuMicros = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * TICK_US
  } catch {
    return 0
  }
}

/** Resident set size in bytes. */
export const rssBytes = (pid: number): number => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? 0 : Number(match[1]) * 1024
  } catch {
    return 0
  }
}

/** The Postgres backends serving `database` (their process title names it). */
export const postgresBackends = (database: string): Array<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, "utf8")
      if (title.startsWith("postgres:") && title.includes(` ${database} `)) pids.push(Number(entry))
    } catch {
      // the process ended while we looked
    }
  }
  return pids
}

/** Samples RSS every 100 ms until stopped; returns the peak. */
export const rssSampler = (pid: number) => {
  let peak = rssBytes(pid)
  const samples: Array<{ at: number; rss: number }> = []
  const started = Date.now()
  const timer = setInterval(() => {
    const rss = rssBytes(pid)
    if (rss > peak) peak = rss
    samples.push({ at: (Date.now() - started) / 1000, rss })
  }, 100)
  return {
    stop: () => {
      clearInterval(timer)
      return { peak, samples }
    }
  }
}

/**
 * The mock upstream (MockUpstream.ts, with `env` such as `MOCK_HOLD_MS`) on `core`, its log in `runDir`, once it
 * answers: its process and origin.
 */
export const startMockUpstream = async (runDir: string, core: number, env: Record<string, string> = {}) => {
  const port = await freePort()
  const process = spawnNode(here("./MockUpstream.ts"), {
    env: { PORT: String(port), ...env },
    logFile: join(runDir, "mock.log"),
    core
  })
  const origin = `http://127.0.0.1:${port}`
  await waitFor((signal) => fetch(`${origin}/`, { signal }).then(() => true), 30, "mock upstream")
  return { process, origin }
}
