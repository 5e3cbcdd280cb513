#!/usr/bin/env node
// `npx @tollgate/plugin-spec init <kind> [folder]`: writes a plugin of a new kind (its own endpoint, POST /v1/<kind>s),
// priced per input token with the gateway's token counter, calling a fake vendor (vendor.ts) through the gateway's
// HTTP capability; its contract test, a tsconfig, and the operator config snippet that loads it. `npm install` and
// `npm test` there pass as generated. Chat plugins are not scaffolded yet: see the spec's README for their contract.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const [command, kind, folderArgument] = process.argv.slice(2)
const usage = "usage: npx @tollgate/plugin-spec init <kind> [folder]   (kind: lowercase letters, digits, dashes)"

if (command !== "init" || kind === undefined) {
  console.error(usage)
  process.exit(2)
}
if (kind === "chat" || ["images", "videos", "embeddings", "transcription", "speech"].includes(kind)) {
  console.error(`init: scaffolds a new kind with its own endpoint; '${kind}' is a built-in kind, not scaffolded yet`)
  process.exit(2)
}
if (!/^[a-z][a-z0-9-]{0,39}$/.test(kind)) {
  console.error(`init: '${kind}' is not a kind name\n${usage}`)
  process.exit(2)
}
const folder = resolve(folderArgument ?? `tollgate-plugin-${kind}`)
if (existsSync(folder)) {
  console.error(`init: ${folder} exists; choose another folder`)
  process.exit(1)
}

const manifest = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8"))
const templates = join(here, "templates")
const values = {
  KIND: kind,
  PATH: `/v1/${kind}s`,
  SPEC_VERSION: `^${manifest.version}`,
  EFFECT_VERSION: manifest.peerDependencies?.effect ?? "^4.1.0"
}
const fill = (text) => text.replace(/__([A-Z_]+)__/g, (whole, name) => values[name] ?? whole)

mkdirSync(folder, { recursive: true })
for (const name of ["package.json", "tsconfig.json", "index.ts", "vendor.ts", "contract.test.ts", "tollgate.yaml", "README.md", ".gitignore"]) {
  writeFileSync(join(folder, name), fill(readFileSync(join(templates, name === ".gitignore" ? "gitignore" : name), "utf8")))
}
console.log(`wrote ${folder}: cd there, npm install, npm test`)
