// `npm start` runs this first (scripts/start.mjs): builds the console into dist/console when it is missing, so a fresh clone
// (`npm ci && npm start`) serves /console without a separate build step. An existing build is left alone.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const index = fileURLToPath(new URL("../dist/console/index.html", import.meta.url))
if (!existsSync(index)) {
  console.log("building the console (dist/console is missing)…")
  const result = spawnSync("npm", ["run", "build", "--silent"], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stdio: "inherit"
  })
  if (result.status !== 0) {
    console.error("the console build failed; the gateway starts anyway and /console says how to build it")
  }
}
