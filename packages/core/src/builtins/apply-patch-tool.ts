import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { chmod, mkdir, rename, rm, stat, writeFile } from "node:fs/promises"
import path from "node:path"
import { type BuiltinSpec, fail, messageOf, ok, relativeToRoot } from "./builtin-env.js"
import { readRegularFile, refuseNonRegular } from "./file-tools.js"

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

/** A planned change: the new content of `file` (none ⇒ delete), staged beside it before any is made. */
interface Change {
  file: string
  content: string | undefined
  /** The file exists now (an update or a delete). */
  existing: boolean
  /** The staged new content, then the original moved aside, both in the file's folder. */
  staged?: string
  backup?: string
  done?: boolean
}

/** A name for a scratch file beside `file`: short, so it fits wherever `file`'s name fits. */
const besideOf = (file: string) =>
  path.join(path.dirname(file), `.tnx-patch-${randomBytes(6).toString("hex")}.tmp`)

/**
 * All files or none. Every new content is first written to a scratch file in its target's folder;
 * then each original is renamed aside and the scratch file renamed into place (renames within one
 * folder do not copy and are atomic). Any failure undoes what was done, newest first: new files
 * removed, originals renamed back, scratch files and created folders removed.
 */
async function commit(changes: Change[]): Promise<void> {
  const createdFolders: string[] = []
  try {
    for (const change of changes) {
      if (change.content === undefined) continue
      const made = await mkdir(path.dirname(change.file), { recursive: true })
      if (made) createdFolders.push(made)
      change.staged = besideOf(change.file)
      await writeFile(change.staged, change.content, "utf8")
      // The new content keeps the file's permissions, as writing over it in place would.
      if (change.existing) await chmod(change.staged, (await stat(change.file)).mode)
    }
    for (const change of changes) {
      if (change.existing) {
        change.backup = besideOf(change.file)
        await rename(change.file, change.backup)
      }
      if (change.staged) await rename(change.staged, change.file)
      change.done = true
    }
  } catch (error) {
    for (const change of [...changes].reverse()) {
      try {
        if (change.backup) await rename(change.backup, change.file)
        else if (change.done) await rm(change.file, { force: true })
        if (change.staged && !change.done) await rm(change.staged, { force: true })
      } catch {
        // Keep undoing the rest; the error that stopped the patch is the one reported.
      }
    }
    for (const folder of createdFolders.reverse()) await rm(folder, { recursive: true, force: true })
    throw error
  }
  // The patch is in place; a backup left behind is litter, not a failure.
  for (const change of changes) if (change.backup) await rm(change.backup, { force: true }).catch(() => {})
}

/** @internal `apply_patch`: all or nothing — every hunk is checked and every file staged before any is changed. */
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
  async run(args, { env, resolve, show }) {
    const operations = parsePatch(String(args.patchText ?? ""))
    const changes: Change[] = []
    try {
      for (const op of operations) {
        const file = resolve(op.path)
        if (changes.some((c) => c.file === file))
          throw new Error(`file named twice in the patch: ${show(op.path)}`)
        if (op.type === "add") {
          if (existsSync(file)) throw new Error(`file already exists: ${show(op.path)}`)
          changes.push({ file, content: op.content, existing: false })
        } else if (op.type === "delete") {
          if (!existsSync(file)) throw new Error(`file not found: ${show(op.path)}`)
          await refuseNonRegular(file)
          changes.push({ file, content: undefined, existing: true })
        } else {
          const content = applyHunks(await readRegularFile(file), op.lines)
          changes.push({ file, content, existing: true })
        }
      }
      await commit(changes)
    } catch (error) {
      return fail(`apply_patch: ${relativeToRoot(messageOf(error), env.root)}`)
    }
    const count = (type: PatchOperation["type"]) => operations.filter((o) => o.type === type).length
    return ok(`Applied patch: ${operations.length} file operation${operations.length === 1 ? "" : "s"}`, {
      added: count("add"),
      updated: count("update"),
      deleted: count("delete"),
    })
  },
}
