/**
 * CPU a process has spent, read from /proc (Linux): utime + stime of all its threads, in µs. For the CPU-per-request
 * gate (test/bench/CpuPerRequest.test.ts), which measures child processes, not wall time.
 */
import { readFileSync } from "node:fs"

const TICK_US = 1_000_000 / 100 // USER_HZ is 100 on Linux

export const hasProc = (): boolean => {
  try {
    readFileSync(`/proc/${process.pid}/stat`, "utf8")
    return true
  } catch {
    return false
  }
}

export const cpuMicros = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  // Fields after the command name (which may hold spaces) start at `state`; utime and stime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}
