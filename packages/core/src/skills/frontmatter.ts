/**
 * A small YAML 1.2 reader for SKILL.md frontmatter. It reads a top-level block mapping whose values
 * are plain, single- or double-quoted, or `|` / `>` block scalars, and skips nested values. It
 * exists so that core needs no YAML dependency; `frontmatter.test.ts` holds it equal to the `yaml`
 * package (the parser upstream uses) on the constructs SKILL.md files use.
 */

/** @internal What {@link readFrontmatter} found in a file. */
export interface Frontmatter {
  /** String, number and boolean values, `String()`-ed and trimmed; other values are left out. */
  data: Record<string, string>
  /** The text after the closing fence (the whole text when there is no frontmatter). */
  content: string
  /** True when fences are present but the YAML between them does not parse. */
  malformed: boolean
}

// The same fences upstream matches, so the body bytes agree.
const FENCED = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/

/** @internal Splits a SKILL.md into frontmatter values and body. Never throws. */
export function readFrontmatter(text: string): Frontmatter {
  const match = FENCED.exec(text)
  if (!match) return { data: {}, content: text, malformed: false }
  const content = match[2] ?? ""
  try {
    return { data: readMapping(match[1] ?? ""), content, malformed: false }
  } catch (error) {
    if (error instanceof YamlSyntaxError) return { data: {}, content, malformed: true }
    throw error
  }
}

class YamlSyntaxError extends Error {}

function fail(message: string): never {
  throw new YamlSyntaxError(message)
}

type Value = string | number | boolean | null | typeof SKIPPED

// A value that parsed but is not a scalar (a nested mapping, sequence or flow collection).
const SKIPPED = Symbol("skipped")

/** @internal Parses a YAML document that is a block mapping (or empty) into its scalar values. */
export function readMapping(source: string): Record<string, string> {
  const lines = dedent(source.replace(/\r\n?/g, "\n").split("\n"))
  const out: Record<string, string> = {}
  const firstLine = nextContentLine(lines, 0)
  if (firstLine !== -1 && isScalarDocument(lines[firstLine] as string)) {
    // A document that is one plain scalar has no keys; a key after it is an error.
    for (let k = firstLine + 1; k < lines.length; k++) {
      if (/:(?=[ \t]|$)/.test(stripComment(lines[k] as string).text))
        fail("a mapping after a scalar document")
    }
    return out
  }
  const seen = new Set<string>()
  let i = 0
  let sawSequence = false
  while (i < lines.length) {
    const line = lines[i] as string
    if (isBlank(line)) {
      i++
      continue
    }
    if (/^[ \t]/.test(line)) fail(`unexpected indentation on line ${i + 1}`)
    if (line === "---" || line.startsWith("--- ")) fail("a second document is not supported")
    if (/^-( |$)/.test(line)) {
      // A top-level sequence: no keys. Its nested lines are skipped below.
      if (seen.size > 0) fail("a sequence cannot follow a mapping")
      sawSequence = true
      i = skipNested(lines, i + 1, 0)
      continue
    }
    if (sawSequence) fail("a mapping cannot follow a sequence")
    const { key, rest } = splitKey(line, i)
    if (seen.has(key)) fail(`duplicate key ${key}`)
    seen.add(key)
    const parsed = readValue(lines, i, rest)
    i = parsed.next
    const value = parsed.value
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      out[key] = String(value).trim()
    }
  }
  return out
}

/** A mapping indented as a whole is the same mapping; a line left of its indentation is an error. */
function dedent(lines: string[]): string[] {
  const first = nextContentLine(lines, 0)
  if (first === -1) return lines
  const base = indentOf(lines[first] as string)
  if (base === 0) return lines
  return lines.map((line) => {
    if (isBlank(line)) return line.slice(Math.min(base, indentOf(line)))
    if (indentOf(line) < base) fail("a line is left of the document's indentation")
    return line.slice(base)
  })
}

function isScalarDocument(line: string): boolean {
  const text = stripComment(line).text
  if (/^-( |$)/.test(text) || /^["'[{|>&*!%@`?]/.test(text)) return false
  return !/:(?=[ \t]|$)/.test(text)
}

function isBlank(line: string): boolean {
  return /^[ \t]*(#.*)?$/.test(line)
}

function indentOf(line: string): number {
  return /^ */.exec(line)?.[0].length ?? 0
}

/** Splits `key: rest` (plain or quoted key). */
function splitKey(line: string, index: number): { key: string; rest: string } {
  if (line[0] === '"' || line[0] === "'") {
    const { text, end } = readQuotedOnLine(line, 0)
    const after = line.slice(end)
    const colon = /^[ \t]*:(?=[ \t]|$)/.exec(after)
    if (!colon) fail(`expected ":" after the key on line ${index + 1}`)
    return { key: text, rest: after.slice(colon[0].length) }
  }
  if (/^[[\]{}&*!|>%@`,?:]/.test(line) && !/^[?:-][^ \t]/.test(line))
    fail(`unsupported key on line ${index + 1}`)
  const colon = /:(?=[ \t]|$)/.exec(line)
  if (!colon) fail(`expected "key: value" on line ${index + 1}`)
  const key = line.slice(0, colon.index).trimEnd()
  if (/[ \t]#/.test(key)) fail(`expected "key: value" on line ${index + 1}`)
  return { key, rest: line.slice(colon.index + 1) }
}

/** Reads the value after `key:` on line `index`; `next` is the first line after it. */
function readValue(lines: string[], index: number, rest: string): { value: Value; next: number } {
  const text = rest.replace(/^[ \t]+/, "")
  if (text === "" || text.startsWith("#")) {
    // The value, if any, is on the following more-indented lines.
    const first = nextContentLine(lines, index + 1)
    if (first === -1 || indentOf(lines[first] as string) === 0) {
      if (first !== -1 && /^-( |$)/.test(lines[first] as string)) {
        // A sequence at the key's own indentation is the key's value.
        return { value: SKIPPED, next: skipNested(lines, first, -1, true) }
      }
      return { value: null, next: index + 1 }
    }
    const body = (lines[first] as string).trimStart()
    if (/^-( |$)/.test(body) || looksLikeKey(body))
      return { value: SKIPPED, next: skipNested(lines, index + 1, 0) }
    if (body.startsWith('"') || body.startsWith("'"))
      return readQuoted(lines, first, indentOf(lines[first] as string))
    if (/^[[{]/.test(body))
      return { value: SKIPPED, next: skipFlow(lines, first, indentOf(lines[first] as string)) }
    if (/^[|>]/.test(body) || /^[&*!%@`]/.test(body)) fail(`unsupported value on line ${first + 1}`)
    return readPlain(lines, first, body, 0)
  }
  if (text.startsWith('"') || text.startsWith("'")) {
    return readQuoted(
      lines,
      index,
      indentOf(lines[index] as string),
      rest.length - text.length + lineKeyLength(lines, index, rest),
    )
  }
  if (text.startsWith("|") || text.startsWith(">")) return readBlockScalar(lines, index, text)
  if (text.startsWith("[") || text.startsWith("{"))
    return { value: SKIPPED, next: skipFlow(lines, index, 0, text) }
  if (/^[&*!%@`]/.test(text)) fail(`unsupported value on line ${index + 1}`)
  if (/^[-?:]( |$)/.test(text)) fail(`unsupported value on line ${index + 1}`)
  return readPlain(lines, index, text, 0)
}

function lineKeyLength(lines: string[], index: number, rest: string): number {
  return (lines[index] as string).length - rest.length
}

function looksLikeKey(text: string): boolean {
  if (text.startsWith('"') || text.startsWith("'")) {
    try {
      const { end } = readQuotedOnLine(text, 0)
      return /^[ \t]*:(?=[ \t]|$)/.test(text.slice(end))
    } catch {
      return false
    }
  }
  return /^[^#[\]{}|>&*!%@`'"][^#]*?:(?=[ \t]|$)/.test(text)
}

function nextContentLine(lines: string[], from: number): number {
  for (let i = from; i < lines.length; i++) if (!isBlank(lines[i] as string)) return i
  return -1
}

/** Skips the lines of a nested value; with `sameIndentSequence`, `- ` items at column 0 too. */
function skipNested(lines: string[], from: number, parentIndent: number, sameIndentSequence = false): number {
  let i = from
  while (i < lines.length) {
    const line = lines[i] as string
    if (isBlank(line)) {
      i++
      continue
    }
    if (/^\t/.test(line)) fail(`tab indentation on line ${i + 1}`)
    const indent = indentOf(line)
    if (indent > parentIndent && parentIndent >= 0) {
      i++
      continue
    }
    if (sameIndentSequence && (indent > 0 || /^-( |$)/.test(line))) {
      i++
      continue
    }
    break
  }
  return i
}

/** Skips a flow collection; it must close before the next key. */
function skipFlow(lines: string[], from: number, _indent: number, firstText?: string): number {
  let depth = 0
  let quote: string | undefined
  for (let i = from; i < lines.length; i++) {
    const text = i === from && firstText !== undefined ? firstText : (lines[i] as string)
    if (i > from && indentOf(text) === 0 && !isBlank(text) && depth > 0) fail("unterminated flow collection")
    for (let c = 0; c < text.length; c++) {
      const ch = text[c]
      if (quote) {
        if (ch === "\\" && quote === '"') c++
        else if (ch === quote) quote = undefined
        continue
      }
      if (ch === '"' || ch === "'") quote = ch
      else if (ch === "#" && (c === 0 || /[ \t]/.test(text[c - 1] as string))) break
      else if (ch === "[" || ch === "{") depth++
      else if (ch === "]" || ch === "}") {
        depth--
        if (depth === 0) {
          const after = text.slice(c + 1)
          if (!isBlank(after)) fail(`unexpected text after a flow collection on line ${i + 1}`)
          return i + 1
        }
      }
    }
  }
  fail("unterminated flow collection")
}

/** Reads a plain scalar starting with `first` on line `index`, with its continuation lines. */
function readPlain(
  lines: string[],
  index: number,
  first: string,
  parentIndent: number,
): { value: Value; next: number } {
  const parts: string[] = []
  let pendingBreaks = 0
  const head = stripComment(first)
  if (head.commented) {
    assertPlainLine(head.text, index)
    return { value: resolvePlain(head.text.trimEnd()), next: index + 1 }
  }
  assertPlainLine(head.text, index)
  parts.push(head.text.trimEnd())
  let i = index + 1
  let multiline = false
  let last = i
  while (i < lines.length) {
    const line = lines[i] as string
    if (/^[ \t]*$/.test(line)) {
      pendingBreaks++
      i++
      continue
    }
    const indent = indentOf(line)
    if (indent <= parentIndent) break
    const text = line.trim()
    if (text.startsWith("#")) break
    const piece = stripComment(text)
    assertPlainLine(piece.text, i)
    if (looksLikeKey(piece.text)) fail(`a mapping inside a plain scalar on line ${i + 1}`)
    parts.push(pendingBreaks > 0 ? "\n".repeat(pendingBreaks) : " ")
    parts.push(piece.text.trimEnd())
    pendingBreaks = 0
    multiline = true
    i++
    last = i
    if (piece.commented) break
  }
  const joined = parts.join("")
  return { value: multiline ? joined : resolvePlain(joined), next: multiline ? last : index + 1 }
}

function assertPlainLine(text: string, index: number): void {
  // `a: b: c` is a mapping nested in a compact one, which YAML refuses.
  if (/:(?=[ \t]|$)/.test(text)) fail(`a mapping inside a plain scalar on line ${index + 1}`)
  if (/^[[\]{}&*!|>%@`]/.test(text) || /^[-?:]( |$)/.test(text))
    fail(`unsupported plain scalar on line ${index + 1}`)
  if (text.includes("\t") && /^\t/.test(text)) fail(`tab on line ${index + 1}`)
}

function stripComment(text: string): { text: string; commented: boolean } {
  const hash = /[ \t]#/.exec(text)
  if (!hash) return { text, commented: false }
  return { text: text.slice(0, hash.index), commented: true }
}

/** YAML 1.2 core schema resolution of a single-line plain scalar. */
function resolvePlain(text: string): Value {
  if (/^(null|Null|NULL|~)?$/.test(text)) return null
  if (/^(true|True|TRUE)$/.test(text)) return true
  if (/^(false|False|FALSE)$/.test(text)) return false
  if (/^[-+]?[0-9]+$/.test(text)) return Number.parseInt(text, 10)
  if (/^0o[0-7]+$/.test(text)) return Number.parseInt(text.slice(2), 8)
  if (/^0x[0-9a-fA-F]+$/.test(text)) return Number.parseInt(text.slice(2), 16)
  if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(text)) return Number.parseFloat(text)
  if (/^[-+]?\.(inf|Inf|INF)$/.test(text)) return text.startsWith("-") ? -Infinity : Infinity
  if (/^\.(nan|NaN|NAN)$/.test(text)) return Number.NaN
  return text
}

function readQuotedOnLine(line: string, start: number): { text: string; end: number } {
  const result = scanQuoted([line], 0, start)
  if (result.endLine !== 0) fail("unterminated quoted key")
  return { text: result.text, end: result.end }
}

/** Reads a quoted scalar that may span lines; after it only a comment may follow. */
function readQuoted(
  lines: string[],
  index: number,
  _indent: number,
  column?: number,
): { value: Value; next: number } {
  const line = lines[index] as string
  const start = column ?? line.search(/["']/)
  const scanned = scanQuoted(lines, index, start)
  const after = (lines[scanned.endLine] as string).slice(scanned.end)
  if (!isBlank(after)) {
    if (/^[ \t]*:(?=[ \t]|$)/.test(after)) fail(`a mapping inside a value on line ${scanned.endLine + 1}`)
    fail(`unexpected text after a quoted scalar on line ${scanned.endLine + 1}`)
  }
  for (let i = index + 1; i <= scanned.endLine; i++) {
    if (indentOf(lines[i] as string) === 0 && (lines[i] as string).trim() !== "") {
      fail(`a quoted scalar's continuation line ${i + 1} must be indented`)
    }
  }
  return { value: scanned.text, next: scanned.endLine + 1 }
}

function scanQuoted(
  lines: string[],
  index: number,
  start: number,
): { text: string; endLine: number; end: number } {
  const first = lines[index] as string
  const quote = first[start]
  let out = ""
  let lineIndex = index
  let text = first
  let c = start + 1
  let pendingSpace = ""
  for (;;) {
    if (c >= text.length) {
      // Line folding: a break becomes a space, an empty line a newline.
      lineIndex++
      if (lineIndex >= lines.length) fail("unterminated quoted scalar")
      out = out.replace(/[ \t]+$/, "")
      let breaks = 0
      while (lineIndex < lines.length && /^[ \t]*$/.test(lines[lineIndex] as string)) {
        breaks++
        lineIndex++
      }
      if (lineIndex >= lines.length) fail("unterminated quoted scalar")
      text = lines[lineIndex] as string
      if (text === "---" || text === "...") fail("document marker inside a quoted scalar")
      c = indentOf(text)
      while (text[c] === "\t") c++
      pendingSpace = breaks > 0 ? "\n".repeat(breaks) : " "
      out += pendingSpace
      continue
    }
    const ch = text[c] as string
    if (quote === "'") {
      if (ch === "'") {
        if (text[c + 1] === "'") {
          out += "'"
          c += 2
          continue
        }
        return { text: out, endLine: lineIndex, end: c + 1 }
      }
      out += ch
      c++
      continue
    }
    if (ch === '"') return { text: out, endLine: lineIndex, end: c + 1 }
    if (ch === "\\") {
      const next = text[c + 1]
      if (next === undefined) {
        // An escaped line break joins the lines with nothing between them.
        lineIndex++
        if (lineIndex >= lines.length) fail("unterminated quoted scalar")
        text = lines[lineIndex] as string
        c = indentOf(text)
        continue
      }
      const escaped = readEscape(text, c + 1)
      out += escaped.text
      c = escaped.end
      continue
    }
    out += ch
    c++
  }
}

const ESCAPES: Record<string, string> = {
  "0": "\0",
  a: "\x07",
  b: "\b",
  t: "\t",
  "\t": "\t",
  n: "\n",
  v: "\v",
  f: "\f",
  r: "\r",
  e: "\x1b",
  " ": " ",
  '"': '"',
  "/": "/",
  "\\": "\\",
  N: "\u0085",
  _: "\u00a0",
  L: "\u2028",
  P: "\u2029",
}

function readEscape(text: string, at: number): { text: string; end: number } {
  const ch = text[at] as string
  const simple = ESCAPES[ch]
  if (simple !== undefined) return { text: simple, end: at + 1 }
  const width = ch === "x" ? 2 : ch === "u" ? 4 : ch === "U" ? 8 : 0
  if (width === 0) fail(`invalid escape \\${ch}`)
  const hex = text.slice(at + 1, at + 1 + width)
  if (!new RegExp(`^[0-9a-fA-F]{${width}}$`).test(hex)) fail(`invalid escape \\${ch}${hex}`)
  return { text: String.fromCodePoint(Number.parseInt(hex, 16)), end: at + 1 + width }
}

/** Reads a `|` or `>` block scalar whose header is `header`. */
function readBlockScalar(lines: string[], index: number, header: string): { value: Value; next: number } {
  const match = /^([|>])([1-9])?([-+])?([1-9])?(?:[ \t]+(#.*)?)?$/.exec(header)
  if (!match) fail(`invalid block scalar header on line ${index + 1}`)
  const folded = match[1] === ">"
  const chomp = match[3] ?? ""
  const explicit = match[2] ?? match[4]
  let i = index + 1
  let indent = explicit ? Number(explicit) : -1
  const body: string[] = []
  while (i < lines.length) {
    const line = lines[i] as string
    if (/^ *$/.test(line)) {
      body.push(line)
      i++
      continue
    }
    const lineIndent = indentOf(line)
    if (indent === -1) {
      if (lineIndent === 0) break
      // Leading empty lines may not be more indented than the first content line.
      for (const empty of body) if (empty.length > lineIndent) fail("a leading empty line is over-indented")
      indent = lineIndent
    }
    if (lineIndent < indent) {
      if (lineIndent > 0) fail(`a block scalar line ${i + 1} is under-indented`)
      break
    }
    body.push(line)
    i++
  }
  // Trailing empty lines belong to the scalar only for chomping; the next key starts at `i`.
  const contentLines = body.map((line) => (indent > 0 ? line.slice(Math.min(indent, line.length)) : ""))
  let end = contentLines.length
  while (end > 0 && (contentLines[end - 1] as string) === "") end--
  const kept = contentLines.slice(0, end)
  let text = folded ? foldLines(kept) : kept.join("\n")
  if (kept.length > 0 && chomp !== "-") text += "\n"
  if (chomp === "+") text += "\n".repeat(contentLines.length - end)
  return { value: text, next: i }
}

/** Folds `>` content: a single break between two normal lines becomes a space. */
function foldLines(lines: string[]): string {
  let out = ""
  for (let k = 0; k < lines.length; k++) {
    const line = lines[k] as string
    if (k === 0) {
      out = line
      continue
    }
    const previous = lines[k - 1] as string
    const moreIndented = (s: string) => s.startsWith(" ") || s.startsWith("\t")
    if (line === "") out += "\n"
    else if (previous === "" || moreIndented(line) || moreIndented(previous)) {
      if (previous !== "" || moreIndented(line)) out += "\n"
      out += line
    } else out += ` ${line}`
  }
  return out
}
