#!/usr/bin/env node
// `npx @tollgate/plugin-spec init <kind> [folder]`: writes a plugin of a new kind (its own endpoint, POST /v1/<kind>s),
// priced per input token with the gateway's token counter, calling a fake vendor (vendor.ts) through the gateway's
// HTTP capability; its contract test, a tsconfig, and the operator config snippet that loads it. `init chat` writes a
// chat plugin instead (templates/chat): a made-up vendor with its own auth header and an NDJSON stream. `npm install`
// and `npm test` there pass as generated. The other built-in kinds are not scaffolded.
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
if (["images", "videos", "embeddings", "transcription", "speech"].includes(kind)) {
  console.error(`init: scaffolds a new kind with its own endpoint, or a chat plugin; '${kind}' is a built-in kind, not scaffolded yet`)
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
// A chat plugin's own files replace the new kind's; the package files are shared.
const own = kind === "chat" ? join(templates, "chat") : templates
const shared = ["package.json", "tsconfig.json", ".gitignore"]
for (const name of [...shared, "index.ts", "vendor.ts", "contract.test.ts", "tollgate.yaml", "README.md"]) {
  const source = join(shared.includes(name) ? templates : own, name === ".gitignore" ? "gitignore" : name)
  writeFileSync(join(folder, name), fill(readFileSync(source, "utf8")))
}
console.log(`wrote ${folder}: cd there, npm install, npm test`)
