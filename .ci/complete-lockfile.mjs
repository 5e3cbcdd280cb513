// The npm registry mirror this project's machines reach serves only linux-x64 builds of packages that ship one
// binary per platform (Biome, Deno). `npm install` then leaves the other platforms' optional packages out of
// package-lock.json, and `npm ci` refuses a lock that lacks them. This adds the missing entries (name, version and
// the os/cpu/libc that make npm skip them here), so `npm ci` works; on another platform npm fetches them by version.
// Run after any `npm install` that touches these packages: `node .ci/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from "node:fs"

const path = new URL("../package-lock.json", import.meta.url)
const lock = JSON.parse(readFileSync(path, "utf8"))
const packages = lock.packages

const platformOf = (name) => {
  const tail = name.split("/").pop()
  const os = ["android", "darwin", "linux", "win32", "freebsd", "openbsd", "sunos", "aix", "netbsd"].find((o) =>
    tail.includes(o)
  )
  const cpu = ["arm64", "x64", "ia32", "arm", "ppc64", "s390x", "riscv64", "loong64", "mips64el"].find((c) =>
    tail.split("-").includes(c)
  )
  const libc = tail.includes("musl") ? "musl" : tail.includes("glibc") || tail.includes("gnu") ? "glibc" : undefined
  return { os, cpu, libc }
}

let added = 0
for (const [location, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`
    if (packages[key] !== undefined || packages[`${location}/node_modules/${name}`] !== undefined) continue
    const { os, cpu, libc } = platformOf(name)
    if (os === undefined || cpu === undefined) continue
    packages[key] = {
      version: version.replace(/^[\^~]/, ""),
      cpu: [cpu],
      ...(libc === undefined ? {} : { libc: [libc] }),
      dev: entry.dev,
      license: entry.license,
      optional: true,
      os: [os]
    }
    added += 1
  }
}
const sorted = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)))
lock.packages = sorted
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`)
console.log(`complete-lockfile: added ${added} platform entries`)
