/**
 * vitest globalSetup: the gateway `npm start` runs (scripts/build-gateway.mjs: src/ bundled into one ES module), built
 * once per run into a folder of its own, for the suites that start gateways as child processes
 * (test/support/ChildGateway.ts). They then test what an operator runs, and each start loads one file instead of
 * compiling ~1,600 TypeScript modules through tsx (about a third of the CPU to ready).
 */
import { randomUUID } from "node:crypto"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    readonly childGateway: string | undefined
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const root = fileURLToPath(new URL("../..", import.meta.url))
  // A folder per setup (each project runs it): two builds never write the same files.
  const outDir = join(root, "dist", `test-gateway-${randomUUID().slice(0, 8)}`)
  const { buildGateway } = (await import(join(root, "scripts", "build-gateway.mjs"))) as {
    readonly buildGateway: (options: { readonly outDir: string }) => Promise<unknown>
  }
  await buildGateway({ outDir })
  project.provide("childGateway", join(outDir, "main.js"))
  return () => rmSync(outDir, { recursive: true, force: true })
}
