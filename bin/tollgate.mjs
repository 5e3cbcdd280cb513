#!/usr/bin/env node
// Starts the TypeScript CLI through tsx, resolved next to this file so `tollgate` works from any directory.
import { register } from "tsx/esm/api"

register()
await import(new URL("../src/cli/main.ts", import.meta.url).href)
