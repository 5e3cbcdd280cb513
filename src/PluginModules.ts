/**
 * How the composition root imports an operator's plugin module (app/PluginRegistry.ts `loadPlugins`). `npm start`
 * runs compiled JavaScript (scripts/build-gateway.mjs), and Node alone cannot import a plugin written in TypeScript
 * (docs/configuration.md's example is one): on exactly that refusal, tsx's loader is registered, once, and the file
 * imported again (under a new URL: Node remembers the failed one). Under tsx, vitest or Deno the first import succeeds.
 */
import { pathToFileURL } from "node:url"

type Module = Record<string, unknown>

let typeScriptLoader: Promise<void> | undefined

// Edge: tsx's module-loader API is promise-based.
const registerTypeScriptLoader = (): Promise<void> => {
  typeScriptLoader ??= import("tsx/esm/api").then(({ register }) => {
    register()
  })
  return typeScriptLoader
}

const isUnknownExtension = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (error as { code?: unknown }).code === "ERR_UNKNOWN_FILE_EXTENSION"

const asUrl = (specifier: string): string => (specifier.startsWith("file:") ? specifier : pathToFileURL(specifier).href)

export const importPluginModule = (specifier: string): Promise<Module> =>
  (import(specifier) as Promise<Module>).catch((error: unknown) =>
    isUnknownExtension(error) && /\.[cm]?tsx?$/.test(specifier)
      ? registerTypeScriptLoader().then(() => import(`${asUrl(specifier)}?typescript`) as Promise<Module>)
      : Promise.reject(error)
  )
