import { fileURLToPath } from "node:url"
import { defineConfig } from "vite"

// Preact's automatic JSX runtime through the transformer's options (oxc in Vite 8): no framework plugin needed.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/console", import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 400
  }
})
