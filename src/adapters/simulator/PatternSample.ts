/**
 * A string that a JSON Schema `pattern` matches, for structured output: clients validate the simulated JSON against
 * their schema, so a string with a pattern has to match it. Covers the regex syntax schemas use (literals, classes,
 * groups, alternation, quantifiers); anything else (lookarounds, back-references) is best effort, and the caller
 * checks the result with the real RegExp.
 */

const DIGITS = "0123456789"
const LOWER = "abcdefghijklmnopqrstuvwxyz"
const UPPER = LOWER.toUpperCase()
const WORD = `${LOWER}${UPPER}${DIGITS}_`
const SPACE = " "
/** Printable ASCII: what `.` and negated classes choose from. */
const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join("")
/** Repetitions of an unbounded quantifier (`*`, `+`, `{n,}`) beyond its minimum. */
const EXTRA_REPEATS = 2

type Node =
  | { readonly _tag: "Chars"; readonly chars: string }
  | { readonly _tag: "Seq"; readonly items: ReadonlyArray<Node> }
  | { readonly _tag: "Alt"; readonly options: ReadonlyArray<Node> }
  | { readonly _tag: "Repeat"; readonly node: Node; readonly min: number; readonly max: number }

const escapeClass = (letter: string): string | undefined => {
  switch (letter) {
    case "d":
      return DIGITS
    case "w":
      return WORD
    case "s":
      return SPACE
    case "D":
      return [...PRINTABLE].filter((c) => !DIGITS.includes(c)).join("")
    case "W":
      return [...PRINTABLE].filter((c) => !WORD.includes(c)).join("")
    case "S":
      return [...PRINTABLE].filter((c) => c !== " ").join("")
    default:
      return undefined
  }
}

const escapedLiteral = (letter: string): string => {
  switch (letter) {
    case "n":
      return "\n"
    case "t":
      return "\t"
    case "r":
      return "\r"
    default:
      return letter
  }
}

class Parser {
  at = 0
  constructor(readonly source: string) {}

  peek(): string | undefined {
    return this.source[this.at]
  }

  alternation(): Node {
    const options = [this.sequence()]
    while (this.peek() === "|") {
      this.at += 1
      options.push(this.sequence())
    }
    return options.length === 1 ? options[0]! : { _tag: "Alt", options }
  }

  sequence(): Node {
    const items: Array<Node> = []
    for (let next = this.peek(); next !== undefined && next !== "|" && next !== ")"; next = this.peek()) {
      const atom = this.atom()
      if (atom !== undefined) items.push(this.quantified(atom))
    }
    return { _tag: "Seq", items }
  }

  atom(): Node | undefined {
    const c = this.source[this.at]!
    this.at += 1
    switch (c) {
      case "^":
      case "$":
        return undefined
      case ".":
        return { _tag: "Chars", chars: PRINTABLE }
      case "(": {
        // Non-capturing and named groups read as plain groups; lookarounds are dropped (best effort).
        let lookaround = false
        if (this.peek() === "?") {
          const kind = this.source[this.at + 1]
          if (kind === "=" || kind === "!") lookaround = true
          else if (kind === "<" && (this.source[this.at + 2] === "=" || this.source[this.at + 2] === "!"))
            lookaround = true
          if (kind === ":") this.at += 2
          else if (kind === "<" && !lookaround) this.at = this.source.indexOf(">", this.at) + 1
          else this.at += kind === "<" ? 3 : 2
        }
        const inner = this.alternation()
        if (this.peek() === ")") this.at += 1
        return lookaround ? undefined : inner
      }
      case "[":
        return { _tag: "Chars", chars: this.characterClass() }
      case "\\": {
        const letter = this.source[this.at] ?? "\\"
        this.at += 1
        const set = escapeClass(letter)
        if (set !== undefined) return { _tag: "Chars", chars: set }
        if (letter === "b" || letter === "B") return undefined
        if (letter === "u" && /^[0-9a-fA-F]{4}$/.test(this.source.slice(this.at, this.at + 4))) {
          const code = Number.parseInt(this.source.slice(this.at, this.at + 4), 16)
          this.at += 4
          return { _tag: "Chars", chars: String.fromCharCode(code) }
        }
        return { _tag: "Chars", chars: escapedLiteral(letter) }
      }
      default:
        return { _tag: "Chars", chars: c }
    }
  }

  characterClass(): string {
    let negated = false
    if (this.peek() === "^") {
      negated = true
      this.at += 1
    }
    let members = ""
    let first = true
    while (this.at < this.source.length && (this.peek() !== "]" || first)) {
      first = false
      let c = this.source[this.at]!
      this.at += 1
      if (c === "\\") {
        const letter = this.source[this.at] ?? "\\"
        this.at += 1
        const set = escapeClass(letter)
        if (set !== undefined) {
          members += set
          continue
        }
        c = escapedLiteral(letter)
      }
      if (this.peek() === "-" && this.source[this.at + 1] !== undefined && this.source[this.at + 1] !== "]") {
        this.at += 1
        let end = this.source[this.at]!
        this.at += 1
        if (end === "\\") {
          end = escapedLiteral(this.source[this.at] ?? "\\")
          this.at += 1
        }
        for (let code = c.charCodeAt(0); code <= end.charCodeAt(0); code += 1) members += String.fromCharCode(code)
      } else {
        members += c
      }
    }
    this.at += 1
    if (!negated) return members
    const rest = [...PRINTABLE].filter((c) => !members.includes(c)).join("")
    return rest.length > 0 ? rest : "\u00e9"
  }

  quantified(node: Node): Node {
    const c = this.peek()
    let min: number
    let max: number
    if (c === "?" || c === "*" || c === "+") {
      this.at += 1
      min = c === "+" ? 1 : 0
      max = c === "?" ? 1 : min + EXTRA_REPEATS
    } else if (c === "{") {
      const bounds = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.at))
      if (bounds === null) return node
      this.at += bounds[0].length
      min = Number(bounds[1])
      max = bounds[2] === undefined ? min : bounds[3] === "" ? min + EXTRA_REPEATS : Number(bounds[3])
    } else {
      return node
    }
    if (this.peek() === "?" || this.peek() === "+") this.at += 1
    return { _tag: "Repeat", node, min, max }
  }
}

/** `choose(n)` returns an integer in [0, n). */
export type Choose = (n: number) => number

const render = (node: Node, choose: Choose, out: Array<string>): void => {
  switch (node._tag) {
    case "Chars":
      if (node.chars.length > 0) out.push(node.chars[choose(node.chars.length)]!)
      return
    case "Seq":
      for (const item of node.items) render(item, choose, out)
      return
    case "Alt":
      render(node.options[choose(node.options.length)]!, choose, out)
      return
    case "Repeat": {
      const count = node.min + choose(node.max - node.min + 1)
      for (let i = 0; i < count; i += 1) render(node.node, choose, out)
      return
    }
  }
}

/** A string the pattern (read as anchored at both ends) describes, built from `choose`'s decisions. */
export const samplePattern = (pattern: string, choose: Choose): string => {
  const parser = new Parser(pattern)
  const tree = parser.alternation()
  const out: Array<string> = []
  render(tree, choose, out)
  return out.join("")
}
