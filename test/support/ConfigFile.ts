/** An operator config for a test gateway (`startTestGateway({ configPath })`), in a temporary folder of its own. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface ConfigFile {
  readonly path: string
  /** Removes the file and its folder. */
  readonly remove: () => void
}

export const operatorConfigFile = (yaml: string): ConfigFile => {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-config-"))
  const path = join(dir, "tollgate.yaml")
  writeFileSync(path, yaml)
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
