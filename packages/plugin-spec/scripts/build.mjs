// Builds the publishable package into dist/: JavaScript and declarations from src/ (tsc, tsconfig.build.json), the
// README, and a package.json whose exports point at them. The workspace's own package.json points at src/ so the
// gateway runs the spec from source; `npm pack ./dist` (or `npm run tarball`) makes the tarball a plugin installs.
import { spawnSync } from "node:child_process"
import { copyFileSync, cpSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
// An output folder may be given (tests build into their own, so two never race on dist/).
const dist = resolve(process.argv[2] ?? join(root, "dist"))
const require = createRequire(join(root, "package.json"))

const typescript = require.resolve("typescript/package.json")
const { bin } = JSON.parse(readFileSync(typescript, "utf8"))
const tsc = join(dirname(typescript), typeof bin === "string" ? bin : bin.tsc)

rmSync(dist, { recursive: true, force: true })
const compiled = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", dist], { stdio: "inherit" })
if (compiled.status !== 0) process.exit(compiled.status ?? 1)

const source = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const built = (path) => path.replace(/^\.\/src\//, "./").replace(/\.ts$/, "")
const exports = Object.fromEntries(
  Object.entries(source.exports).map(([entry, path]) => [
    entry,
    { types: `${built(path)}.d.ts`, default: `${built(path)}.js` }
  ])
)
const manifest = {
  name: source.name,
  version: source.version,
  description: source.description,
  type: "module",
  license: source.license,
  engines: source.engines,
  sideEffects: false,
  exports,
  // The scaffold is plain JavaScript and templates, copied as is.
  ...(source.bin === undefined ? {} : { bin: source.bin }),
  peerDependencies: source.peerDependencies,
  peerDependenciesMeta: source.peerDependenciesMeta
}
writeFileSync(join(dist, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`)
copyFileSync(join(root, "README.md"), join(dist, "README.md"))
cpSync(join(root, "scaffold"), join(dist, "scaffold"), { recursive: true })
