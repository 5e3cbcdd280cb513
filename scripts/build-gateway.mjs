// Builds the gateway `npm start` runs: one ES module, dist/gateway/main.js, bundling src/ with `effect`, `@effect/*`,
// `@tollgate/plugin-spec` and whatever they import (esbuild). Node then loads one file instead of running ~1,600
// modules through tsx's TypeScript loader: about a third of the CPU to ready and ~130 MB less RSS (bench/README.md,
// "Start-up and memory"). Tests, `npm run cli` and Deno still run src/ as TypeScript.
//
// `--if-stale` (how `npm start` runs it, scripts/start.mjs) builds only when the bundle is missing or an input changed since: every file
// esbuild read (listed in dist/gateway/inputs.json), this script, and npm's record of node_modules.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs"
import { join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const self = fileURLToPath(import.meta.url)
// Always inputs: a changed dependency changes npm's record of the tree, whatever the extracted files' dates.
const alwaysInputs = [relative(root, self), "package.json", "package-lock.json", "node_modules/.package-lock.json"]

/** Where a build goes: dist/gateway, or another folder inside the repository (node_modules must resolve from it). */
const layout = (outDir = join(root, "dist", "gateway"), entry = "src/main.ts") => ({
  outDir,
  entry,
  outfile: join(outDir, "main.js"),
  inputsFile: join(outDir, "inputs.json")
})

/** Why the bundle must be built, or undefined when it is up to date. */
const staleness = ({ outfile, inputsFile }) => {
  if (!existsSync(outfile) || !existsSync(inputsFile)) return `${relative(root, outfile)} is missing`
  const built = statSync(outfile).mtimeMs
  const { inputs } = JSON.parse(readFileSync(inputsFile, "utf8"))
  for (const input of [...alwaysInputs, ...inputs]) {
    const path = join(root, input)
    if (!existsSync(path)) return `${input} is gone`
    if (statSync(path).mtimeMs > built) return `${input} changed`
  }
  return undefined
}

// Packages our own code imports stay outside the bundle (node_modules resolves them at run time, as for any
// program): some load files next to themselves (PGlite's WebAssembly, ffmpeg's binary) and the rest need no
// bundling to load fast. The effect family is bundled — most of the start-up cost is its hundreds of modules —
// and so is everything it imports, so each of its dependencies keeps the version npm installed for it.
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const bundled = (name) => name === "effect" || name.startsWith("@effect/") || name.startsWith("@tollgate/")
const externalDeps = new Set(Object.keys(manifest.dependencies).filter((name) => !bundled(name)))
const packageOf = (specifier) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")
const inNodeModules = (path) => path.split(sep).includes("node_modules")

const ownImports = {
  name: "own-imports-external",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith("node:") || inNodeModules(args.importer)) return undefined
      return externalDeps.has(packageOf(args.path)) ? { path: args.path, external: true } : undefined
    })
  }
}

// In one bundle every module's import.meta.url is the bundle's; the few of src/ that find files beside them
// (migrations, the console's build) are given their own source file's URL, relative to the bundle.
const sourceUrls = (outDir) => ({
  name: "source-urls",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, "utf8")
      if (inNodeModules(args.path) || !text.includes("import.meta.url")) return undefined
      const fromBundle = relative(outDir, args.path).split(sep).join("/")
      const url = `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`
      return { contents: text.replaceAll("import.meta.url", url), loader: "ts" }
    })
  }
})

const buildBundle = async ({ outDir, entry, outfile, inputsFile }) => {
  const { build } = await import("esbuild")
  mkdirSync(outDir, { recursive: true })
  const partial = join(outDir, "main.partial.js")
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    outfile: partial,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // For `node --enable-source-maps` (stack traces in src/); the sources stay on disk, not in the map.
    sourcemap: "linked",
    sourcesContent: false,
    metafile: true,
    logLevel: "warning",
    plugins: [ownImports, sourceUrls(outDir)],
    // Bundled CommonJS dependencies (ws, pg) call require(); an ES module has none of its own.
    banner: { js: 'import { createRequire as __tollgateRequire } from "node:module"\nconst require = __tollgateRequire(import.meta.url)' }
  })
  const inputs = Object.keys(result.metafile.inputs)
  writeFileSync(inputsFile, `${JSON.stringify({ inputs }, null, 1)}\n`)
  renameSync(`${partial}.map`, `${outfile}.map`)
  // The bundle's own source-map comment names the partial file; renamed last, so a build cut short leaves no
  // bundle newer than its inputs.
  writeFileSync(partial, readFileSync(partial, "utf8").replace(/main\.partial\.js\.map\s*$/, "main.js.map\n"))
  renameSync(partial, outfile)
  return inputs.length
}

/**
 * Builds dist/gateway/main.js (or `outDir`/main.js) from src/main.ts (or `entry`, such as the ladder's in-memory rung);
 * with `ifStale`, only when it is missing or older than an input. With `check`, builds nothing and answers why it
 * would (undefined: up to date).
 */
export const buildGateway = async ({ ifStale = false, check = false, outDir = undefined, entry = undefined } = {}) => {
  const paths = layout(outDir, entry)
  const reason = ifStale || check ? staleness(paths) : "asked to"
  if (check || reason === undefined) return reason
  const started = performance.now()
  console.log(`building the gateway into ${relative(root, paths.outDir)} (${reason})…`)
  const count = await buildBundle(paths)
  console.log(`built ${relative(root, paths.outfile)} from ${count} files in ${Math.round(performance.now() - started)} ms`)
  return reason
}

// node scripts/build-gateway.mjs [--if-stale | --check] [--out <folder>] [--entry <file.ts>]; --check exits 1 when a
// build is due.
if (process.argv[1] === self) {
  const args = process.argv.slice(2)
  const out = args.indexOf("--out")
  const entry = args.indexOf("--entry")
  const check = args.includes("--check")
  const reason = await buildGateway({
    ifStale: args.includes("--if-stale"),
    check,
    outDir: out === -1 ? undefined : resolve(args[out + 1]),
    entry: entry === -1 ? undefined : args[entry + 1]
  })
  if (check) {
    console.log(reason === undefined ? "up to date" : `stale: ${reason}`)
    process.exitCode = reason === undefined ? 0 : 1
  }
}
