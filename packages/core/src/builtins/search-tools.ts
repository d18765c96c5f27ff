import { type Dirent, readdirSync } from "node:fs"
import path from "node:path"
import { type BuiltinSpec, fail, messageOf, ok } from "./builtin-env.js"
import { readRegularFile } from "./file-tools.js"
import { LineMatcher, PatternTooSlow } from "./grep-matcher.js"

const pathOf = (args: Record<string, unknown>): string[] =>
  typeof args.path === "string" && args.path ? [args.path] : []

/**
 * @internal Files under `root`, following no symlinks (a link could lead out of the root), skipping
 * `node_modules` and `.git`. The order is upstream's: a folder's files by name, its subfolders
 * last-first, depth first.
 */
function* filesUnder(root: string): Generator<string> {
  const stack = [root]
  while (stack.length > 0) {
    const dir = stack.pop() as string
    let entries: Dirent[]
    try {
      entries = readdirSync(dir, { withFileTypes: true })
    } catch {
      continue
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules" && entry.name !== ".git") stack.push(full)
      } else if (entry.isFile()) yield full
    }
  }
}

/** @internal A glob (`*`, `**`, `?`) as an anchored expression; a pattern without `/` tests the base name. */
export function globMatcher(glob: string): (relative: string) => boolean {
  let source = ""
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i] as string
    if (ch === "*" && glob[i + 1] === "*") {
      source += ".*"
      i++
      if (glob[i + 1] === "/") i++
    } else if (ch === "*") source += "[^/]*"
    else if (ch === "?") source += "[^/]"
    else source += ch.replace(/[\\^$.|+()[\]{}]/, "\\$&")
  }
  const expression = new RegExp(`^${source}$`)
  if (glob.includes("/")) return (relative) => expression.test(relative)
  return (relative) => expression.test(path.basename(relative))
}

/** @internal `grep`: regex matches as `file:line:text`. */
export const grepTool: BuiltinSpec = {
  name: "grep",
  description: "Search file contents by regex under a directory. Output is file:line:text matches.",
  inputSchema: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "Regular expression to search for" },
      path: { type: "string", description: "Directory to search (default: process cwd)" },
      include: { type: "string", description: "Glob filter for file names" },
      limit: { type: "number", description: "Maximum number of matches (default 100)" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  paths: pathOf,
  destructive: () => false,
  async run(args, { env, resolve, signal }) {
    const pattern = String(args.pattern ?? "")
    if (!pattern) return fail("grep: pattern is required")
    try {
      // Compiling is linear in the pattern; only matching can run away, and that runs off this thread.
      new RegExp(pattern)
    } catch (error) {
      return fail(`grep: invalid regex: ${messageOf(error)}`)
    }
    const given = typeof args.path === "string" && args.path ? args.path : undefined
    const base = given ? resolve(given) : env.root
    // Files are named relative to the root (upstream names them absolute without a path).
    const shown = (file: string) => path.relative(env.root, file)
    const include = typeof args.include === "string" && args.include ? globMatcher(args.include) : undefined
    const limit = typeof args.limit === "number" ? args.limit : 100
    const matches: string[] = []
    const matcher = new LineMatcher(pattern, env.grepTimeoutMs, signal)
    // Files go to the matcher in batches: one round trip per file would cost more than the match.
    let batch: { file: string; text: string }[] = []
    let batchChars = 0
    const flush = async () => {
      const sent = batch
      batch = []
      batchChars = 0
      const hits = await matcher.match(
        sent.map((b) => b.text),
        limit - matches.length,
      )
      let split: { at: number; lines: string[] } | undefined
      for (const [at, line] of hits) {
        const { file, text } = sent[at] as { file: string; text: string }
        if (split?.at !== at) split = { at, lines: text.split("\n") }
        matches.push(`${shown(file)}:${line + 1}:${split.lines[line]}`)
      }
    }
    try {
      for (const file of filesUnder(base)) {
        if (matches.length >= limit) break
        if (include && !include(path.relative(base, file))) continue
        let text: string
        try {
          text = await readRegularFile(file)
        } catch {
          continue
        }
        batch.push({ file, text })
        batchChars += text.length
        if (batch.length >= 64 || batchChars >= 1 << 20) await flush()
      }
      if (batch.length > 0 && matches.length < limit) await flush()
    } catch (error) {
      if (!(error instanceof PatternTooSlow)) return fail(`grep: ${messageOf(error)}`)
      return fail(
        `grep: pattern took too long (over ${error.budgetMs} ms); use a simpler pattern or a narrower path`,
        { timedOut: true },
      )
    } finally {
      await matcher.close()
    }
    return ok(matches.join("\n"), { count: matches.length })
  },
}

/** @internal `glob`: matching files as sorted relative paths. */
export const globTool: BuiltinSpec = {
  name: "glob",
  description: "List files matching a glob under a directory. Output is newline-joined relative paths.",
  inputSchema: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "Glob pattern to match" },
      path: { type: "string", description: "Directory to search (default: process cwd)" },
      limit: { type: "number", description: "Maximum number of results (default 100)" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  paths: pathOf,
  destructive: () => false,
  async run(args, { env, resolve }) {
    const pattern = String(args.pattern ?? "")
    if (!pattern) return fail("glob: pattern is required")
    const base = typeof args.path === "string" && args.path ? resolve(args.path) : env.root
    const limit = typeof args.limit === "number" ? args.limit : 100
    const matches = globMatcher(pattern)
    const found: string[] = []
    for (const file of filesUnder(base)) {
      if (found.length >= limit) break
      const relative = path.relative(base, file)
      if (matches(relative)) found.push(relative)
    }
    found.sort()
    return ok(found.join("\n"), { count: found.length })
  },
}
