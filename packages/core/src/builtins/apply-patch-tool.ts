import { existsSync } from "node:fs"
import { mkdir, readFile, rm, writeFile } from "node:fs/promises"
import path from "node:path"
import { type BuiltinSpec, fail, messageOf, ok } from "./builtin-env.js"

type PatchOperation =
  | { type: "add"; path: string; content: string }
  | { type: "delete"; path: string }
  | { type: "update"; path: string; lines: string[] }

const MARKER = /^\*\*\* (Add|Update|Delete) File: (.+)$/

/** @internal Reads the Begin/End Patch grammar. @throws Error naming what is wrong. */
export function parsePatch(text: string): PatchOperation[] {
  const lines = text.split("\n")
  let at = 0
  while (at < lines.length && (lines[at] as string).trim() === "") at++
  if (lines[at]?.trim() !== "*** Begin Patch") throw new Error("missing '*** Begin Patch'")
  at++
  const operations: PatchOperation[] = []
  const isEnd = (line: string) => line.trim() === "*** End Patch"
  while (at < lines.length) {
    const line = lines[at] as string
    if (isEnd(line)) return operations
    if (line.trim() === "") {
      at++
      continue
    }
    const marker = MARKER.exec(line)
    if (!marker) throw new Error(`unexpected line: ${line}`)
    const file = (marker[2] as string).trim()
    at++
    const body: string[] = []
    while (at < lines.length && !isEnd(lines[at] as string) && !MARKER.test(lines[at] as string)) {
      body.push(lines[at] as string)
      at++
    }
    if (marker[1] === "Add") {
      operations.push({
        type: "add",
        path: file,
        content: body.map((l) => (l.startsWith("+") ? l.slice(1) : l)).join("\n"),
      })
    } else if (marker[1] === "Delete") operations.push({ type: "delete", path: file })
    else operations.push({ type: "update", path: file, lines: body })
  }
  throw new Error("missing '*** End Patch'")
}

/** Applies an Update section's hunks (split at `@@` lines) to a file's text. */
function applyHunks(text: string, lines: string[]): string {
  const hunks: string[][] = [[]]
  for (const line of lines) {
    if (line.startsWith("@@")) hunks.push([])
    else (hunks[hunks.length - 1] as string[]).push(line)
  }
  let result = text
  for (const hunk of hunks.filter((h) => h.length > 0)) {
    const before: string[] = []
    const after: string[] = []
    for (const line of hunk) {
      const mark = line[0]
      const rest = mark === "-" || mark === "+" || mark === " " ? line.slice(1) : line
      if (mark !== "+") before.push(rest)
      if (mark !== "-") after.push(rest)
    }
    const from = before.join("\n")
    const to = after.join("\n")
    if (from === "") {
      // No context: an insertion at the end.
      result = result + (result === "" || result.endsWith("\n") ? "" : "\n") + to
      continue
    }
    const index = result.indexOf(from)
    if (index === -1) throw new Error("hunk does not match file contents")
    result = result.slice(0, index) + to + result.slice(index + from.length)
  }
  return result
}

/** @internal `apply_patch`: all or nothing — every hunk is checked before any file is written. */
export const applyPatchTool: BuiltinSpec = {
  name: "apply_patch",
  description:
    "Apply a patch (Begin/End Patch grammar: Add/Update/Delete File). Atomic — a non-matching hunk aborts with no writes.",
  inputSchema: {
    type: "object",
    properties: {
      patchText: { type: "string", description: "The patch text in Begin/End Patch format" },
    },
    required: ["patchText"],
    additionalProperties: false,
  },
  paths(args) {
    try {
      return parsePatch(String(args.patchText ?? "")).map((op) => op.path)
    } catch {
      return []
    }
  },
  precheck(args) {
    const text = String(args.patchText ?? "")
    if (!text) return fail("apply_patch: patchText is required")
    try {
      parsePatch(text)
    } catch (error) {
      return fail(`apply_patch: ${messageOf(error)}`)
    }
    return undefined
  },
  destructive: () => true,
  async run(args, { resolve }) {
    const operations = parsePatch(String(args.patchText ?? ""))
    const writes: { file: string; content: string }[] = []
    const deletes: string[] = []
    try {
      for (const op of operations) {
        const file = resolve(op.path)
        if (op.type === "add") {
          if (existsSync(file)) throw new Error(`file already exists: ${op.path}`)
          writes.push({ file, content: op.content })
        } else if (op.type === "delete") {
          if (!existsSync(file)) throw new Error(`file not found: ${op.path}`)
          deletes.push(file)
        } else writes.push({ file, content: applyHunks(await readFile(file, "utf8"), op.lines) })
      }
    } catch (error) {
      return fail(`apply_patch: ${messageOf(error)}`)
    }
    for (const w of writes) {
      await mkdir(path.dirname(w.file), { recursive: true })
      await writeFile(w.file, w.content, "utf8")
    }
    for (const file of deletes) await rm(file, { force: true })
    const count = (type: PatchOperation["type"]) => operations.filter((o) => o.type === type).length
    return ok(`Applied patch: ${operations.length} file operation${operations.length === 1 ? "" : "s"}`, {
      added: count("add"),
      updated: count("update"),
      deleted: count("delete"),
    })
  },
}
