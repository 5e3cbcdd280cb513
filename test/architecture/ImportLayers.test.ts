/**
 * The layer table of AGENTS.md / docs/architecture.md, enforced: every import in `src/`, the plugin spec package and
 * the examples is read (static, dynamic and re-exports, type-only included: a type import still couples the layers)
 * and checked against what its layer may import. A failure names the file, the import and the rule.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const ROOT = resolve(import.meta.dirname, "../..")

const filesUnder = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === "node_modules" ? [] : filesUnder(path)
    return /\.(ts|tsx|mts)$/.test(name) && !name.endsWith(".d.ts") ? [path] : []
  })

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^;'"]*?from\s*["']([^"']+)["']|(?:^|\n)\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g

/** Every module specifier a file names. */
const importsOf = (source: string): ReadonlyArray<string> =>
  [...source.matchAll(IMPORT)].map((match) => match[1] ?? match[2] ?? match[3] ?? "")

/** `domain`, `app`, … for a file under src/; the composition root's files are their own layer. */
const layerOf = (file: string): string => {
  const path = relative(join(ROOT, "src"), file)
  const [first, second] = path.split("/")
  return second === undefined ? "root" : (first as string)
}

interface Rule {
  readonly name: string
  readonly applies: (file: string) => boolean
  /** Why this import is not allowed, or undefined when it is. */
  readonly refuses: (specifier: string, target: string | undefined) => string | undefined
}

/** The file a relative specifier points at, relative to the repository root; undefined for a package. */
const targetOf = (file: string, specifier: string): string | undefined =>
  specifier.startsWith(".") ? relative(ROOT, resolve(dirname(file), specifier)) : undefined

const inSrc = (target: string | undefined, layer: string) => target?.startsWith(`src/${layer}/`) === true

const RULES: ReadonlyArray<Rule> = [
  {
    name: "domain imports only effect",
    applies: (file) => layerOf(file) === "domain",
    refuses: (specifier, target) =>
      target === undefined
        ? specifier === "effect" || specifier.startsWith("effect/")
          ? undefined
          : "domain may import only effect"
        : inSrc(target, "domain")
          ? undefined
          : "domain may import only domain"
  },
  {
    name: "app never imports adapters or http",
    applies: (file) => layerOf(file) === "app",
    refuses: (_, target) =>
      inSrc(target, "adapters") || inSrc(target, "http") ? "app may not import adapters or http" : undefined
  },
  {
    name: "plugins never import app internals or http",
    applies: (file) => layerOf(file) === "plugins",
    // App's ports (interfaces its adapters implement) are public, and so is tracing (a span only while exported).
    refuses: (_, target) =>
      (inSrc(target, "app") && target !== "src/app/Traced.ts" && !inSrc(target, "app/ports")) || inSrc(target, "http")
        ? "plugins may not import app or http"
        : undefined
  },
  {
    name: "the plugin spec imports nothing of Tollgate",
    applies: (file) => relative(ROOT, file).startsWith("packages/plugin-spec/src/"),
    refuses: (specifier, target) =>
      target === undefined
        ? ["effect", "vitest", "fast-check"].some((name) => specifier === name || specifier.startsWith(`${name}/`))
          ? undefined
          : "the plugin spec may import only effect (and vitest, fast-check in its contract suites)"
        : target.startsWith("packages/plugin-spec/src/")
          ? undefined
          : "the plugin spec may not import Tollgate's code"
  },
  {
    name: "example plugins import only the plugin spec and effect",
    applies: (file) => /^examples\/[^/]+\/index\.ts$/.test(relative(ROOT, file)),
    refuses: (specifier, target) =>
      target === undefined
        ? specifier === "effect" || specifier.startsWith("effect/") || specifier.startsWith("@tollgate/plugin-spec")
          ? undefined
          : "an example plugin may import only @tollgate/plugin-spec and effect"
        : target.startsWith("examples/")
          ? undefined
          : "an example plugin may not import Tollgate's code"
  }
]

const checked = [
  ...filesUnder(join(ROOT, "src")),
  ...filesUnder(join(ROOT, "packages/plugin-spec/src")),
  ...filesUnder(join(ROOT, "examples"))
]

describe("the import layers", () => {
  it("reads static, dynamic, type-only and re-export specifiers", () => {
    expect(
      importsOf(`import { a } from "./a.ts"
import type { B } from "../b.ts"
export { c } from "./c.ts"
export type * from "./d.ts"
import "./e.ts"
const f = await import("./f.ts")
import {
  g,
  h
} from "./g.ts"`)
    ).toEqual(["./a.ts", "../b.ts", "./c.ts", "./d.ts", "./e.ts", "./f.ts", "./g.ts"])
  })

  for (const rule of RULES) {
    it(rule.name, () => {
      const violations = checked.filter(rule.applies).flatMap((file) =>
        importsOf(readFileSync(file, "utf8")).flatMap((specifier) => {
          const why = rule.refuses(specifier, targetOf(file, specifier))
          return why === undefined ? [] : [`${relative(ROOT, file)} imports ${specifier}: ${why}`]
        })
      )
      expect(violations).toEqual([])
    })
  }
})

const STATEMENT =
  /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(\{[^}]*\}|\*\s+as\s+\w+|\*|\w+(?:\s*,\s*\{[^}]*\})?)\s+from\s*["']([^"']+)["']/g

/** The relative modules a file needs at run time: type-only imports and re-exports are erased, so they do not count. */
const runtimeImportsOf = (source: string): ReadonlyArray<string> =>
  [...source.matchAll(STATEMENT)].flatMap(([, typeOnly, clause, specifier]) => {
    if (typeOnly !== undefined || !specifier?.startsWith(".")) return []
    const named = /^\{([^}]*)\}$/.exec(clause?.trim() ?? "")
    const names =
      named?.[1]
        ?.split(",")
        .map((name) => name.trim())
        .filter((name) => name !== "") ?? []
    return named !== null && names.every((name) => name.startsWith("type ")) ? [] : [specifier]
  })

/** Groups of modules that import each other at run time (strongly connected components larger than one). */
const cyclesOf = (graph: ReadonlyMap<string, ReadonlyArray<string>>): ReadonlyArray<ReadonlyArray<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const cycles: Array<Array<string>> = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node) as number)
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number))
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node) as number, index.get(next) as number))
    }
    if (low.get(node) === index.get(node)) {
      const component: Array<string> = []
      for (let member = stack.pop(); member !== undefined; member = member === node ? undefined : stack.pop()) {
        component.push(member)
      }
      if (component.length > 1) cycles.push(component.sort())
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return cycles
}

describe("module cycles", () => {
  it("reads which imports are needed at run time", () => {
    expect(
      runtimeImportsOf(`import type { A } from "./a.ts"
import { type B, type C } from "./b.ts"
import { type D, e } from "./c.ts"
export type { F } from "./d.ts"
export { g } from "./e.ts"
import * as H from "./f.ts"`)
    ).toEqual(["./c.ts", "./e.ts", "./f.ts"])
  })

  it("finds a cycle however long, and only the modules on it", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a", "d"]],
      ["d", []],
      ["e", ["a"]]
    ])
    expect(cyclesOf(graph)).toEqual([["a", "b", "c"]])
  })

  it("has no two modules in src/ that import each other at run time", () => {
    const files = filesUnder(join(ROOT, "src"))
    const graph = new Map(
      files.map((file) => [
        relative(ROOT, file),
        runtimeImportsOf(readFileSync(file, "utf8")).map((specifier) =>
          relative(ROOT, resolve(dirname(file), specifier))
        )
      ])
    )
    expect(cyclesOf(graph)).toEqual([])
  })
})

describe("module size", () => {
  it("keeps every file under src/ at 350 lines or fewer", () => {
    const long = filesUnder(join(ROOT, "src"))
      .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, "utf8").split("\n").length - 1 }))
      .filter(({ lines }) => lines > 350)
      .map(({ file, lines }) => `${file}: ${lines} lines`)
    expect(long).toEqual([])
  })
})
