import { type Stats, constants } from "node:fs"
import { mkdir, open, stat, writeFile } from "node:fs/promises"
import path from "node:path"
import { type BuiltinSpec, fail, messageOf, ok, relativeToRoot } from "./builtin-env.js"

const pathOf = (args: Record<string, unknown>): string[] =>
  typeof args.path === "string" && args.path ? [args.path] : []

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return "a directory"
  if (stats.isFIFO()) return "a FIFO"
  if (stats.isSocket()) return "a socket"
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device"
  return "not a file"
}

/**
 * @internal Throws when `file` exists and is not a regular file: opening a FIFO blocks until a
 * writer comes, a device can stream forever, so neither is ever opened. A missing file passes.
 */
export async function refuseNonRegular(file: string): Promise<void> {
  let stats: Stats
  try {
    stats = await stat(file)
  } catch {
    return
  }
  if (!stats.isFile()) throw new Error(`${file} is ${kindOf(stats)}, not a regular file`)
}

/**
 * @internal A regular file's UTF-8 text. Refused before opening when it is not a regular file, and
 * opened non-blocking and checked again, so a FIFO put in its place after the check cannot block.
 */
export async function readRegularFile(file: string): Promise<string> {
  await refuseNonRegular(file)
  const handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) throw new Error(`${file} is ${kindOf(stats)}, not a regular file`)
    return await handle.readFile("utf8")
  } finally {
    await handle.close()
  }
}

/** @internal `read`: a UTF-8 file, or a 1-based line window of it. */
export const readTool: BuiltinSpec = {
  name: "read",
  description: "Read a UTF-8 text file. With offset/limit, return only that line window.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path to the file to read" },
      offset: { type: "number", description: "1-based line to start from" },
      limit: { type: "number", description: "Maximum number of lines to read" },
    },
    required: ["path"],
    additionalProperties: false,
  },
  paths: pathOf,
  destructive: () => false,
  async run(args, { env, resolve }) {
    const given = String(args.path ?? "")
    if (!given) return fail("read: path is required")
    const target = resolve(given)
    let text: string
    try {
      text = await readRegularFile(target)
    } catch (error) {
      return fail(`read: ${relativeToRoot(messageOf(error), env.root)}`)
    }
    if (args.offset === undefined && args.limit === undefined) return ok(text)
    const lines = text.split("\n")
    const from = typeof args.offset === "number" ? Math.max(1, Math.trunc(args.offset)) - 1 : 0
    const count = typeof args.limit === "number" ? Math.max(0, Math.trunc(args.limit)) : lines.length - from
    return ok(lines.slice(from, from + count).join("\n"))
  },
}

/** @internal `write`: creates or overwrites a file, with its parent folders. */
export const writeTool: BuiltinSpec = {
  name: "write",
  description: "Write content to a file (create/overwrite), creating parent directories.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path to write to" },
      content: { type: "string", description: "Content to write" },
    },
    required: ["path", "content"],
    additionalProperties: false,
  },
  paths: pathOf,
  destructive: () => true,
  async run(args, { resolve, show }) {
    const given = String(args.path ?? "")
    if (!given) return fail("write: path is required")
    const content = typeof args.content === "string" ? args.content : String(args.content ?? "")
    const target = resolve(given)
    // Writing opens for writing, which blocks on a FIFO until a reader comes.
    await refuseNonRegular(target)
    await mkdir(path.dirname(target), { recursive: true })
    await writeFile(target, content, "utf8")
    const bytes = Buffer.byteLength(content, "utf8")
    return ok(`Wrote ${bytes} bytes to ${show(given)}`, { bytes })
  },
}

/** @internal `edit`: replaces one unique occurrence of a string, or all with `replaceAll`. */
export const editTool: BuiltinSpec = {
  name: "edit",
  description:
    "Exact-string replace in a file. Default replaces a single unique occurrence; replaceAll replaces all.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path to the file to edit" },
      oldString: { type: "string", description: "Exact string to replace" },
      newString: { type: "string", description: "Replacement string" },
      replaceAll: { type: "boolean", description: "Replace all occurrences" },
    },
    required: ["path", "oldString", "newString"],
    additionalProperties: false,
  },
  paths: pathOf,
  destructive: () => true,
  async run(args, { env, resolve, show }) {
    const given = String(args.path ?? "")
    if (!given) return fail("edit: path is required")
    const oldString = args.oldString
    if (typeof oldString !== "string" || oldString === "") return fail("edit: oldString is required")
    const newString = typeof args.newString === "string" ? args.newString : String(args.newString ?? "")
    const target = resolve(given)
    let text: string
    try {
      text = await readRegularFile(target)
    } catch (error) {
      return fail(`edit: ${relativeToRoot(messageOf(error), env.root)}`)
    }
    const pieces = text.split(oldString)
    const count = pieces.length - 1
    if (count === 0) return fail(`edit: oldString not found in ${show(given)}`)
    const all = args.replaceAll === true
    if (!all && count > 1)
      return fail(`edit: oldString is not unique in ${show(given)} (${count} occurrences); use replaceAll`)
    // split/join, not String.replace: `$&` and friends in newString stay literal.
    const next = all ? pieces.join(newString) : pieces[0] + newString + pieces.slice(1).join(oldString)
    await writeFile(target, next, "utf8")
    const replaced = all ? count : 1
    return ok(`Edited ${show(given)} (${replaced} replacement${replaced === 1 ? "" : "s"})`, {
      replacements: replaced,
    })
  },
}
