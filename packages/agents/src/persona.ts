import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import path from "node:path"
import { ConfigError, type Tool, defineTool } from "@toolnexus/core"
import { type Agent, agent } from "./agent.js"

/** The files a persona's soul is composed of, in this order (upstream's §7E): identity first, memory last. */
export const BOOTSTRAP_ORDER = [
  "AGENTS.md",
  "SOUL.md",
  "IDENTITY.md",
  "USER.md",
  "TOOLS.md",
  "HEARTBEAT.md",
  "MEMORY.md",
] as const

/** A heartbeat reply containing this is silent. */
export const HEARTBEAT_OK = "HEARTBEAT_OK"

/** What a heartbeat wakes the persona with (upstream's text). */
export const HEARTBEAT_PROMPT = `Heartbeat. Read your HEARTBEAT.md section and follow it. If nothing needs attention, reply ${HEARTBEAT_OK}.`

// Each file is cut at 2 MiB with this notice; the file on disk is untouched.
const MAX_FILE_BYTES = 2 * 1024 * 1024
const TRUNCATION_NOTICE = "\n[truncated: exceeds 2 MB bootstrap cap]"

function readCapped(file: string): string | undefined {
  let bytes: Buffer
  try {
    bytes = readFileSync(file)
  } catch {
    return undefined
  }
  if (bytes.byteLength <= MAX_FILE_BYTES) return bytes.toString("utf8")
  return bytes.subarray(0, MAX_FILE_BYTES).toString("utf8") + TRUNCATION_NOTICE
}

/**
 * Composes a persona folder's bootstrap files into one system prompt: each present file of
 * {@link BOOTSTRAP_ORDER} as `## <file>` and its trimmed text, joined by a blank line.
 *
 * @example
 * const { soul, found } = composeSoul("./personas/ava") // found: ["SOUL.md", "USER.md", ...]
 */
export function composeSoul(dir: string): {
  /** The system prompt: a `## <file>` section per file found, `""` when there are none. */
  soul: string
  /** The names of the bootstrap files found in `dir`, in {@link BOOTSTRAP_ORDER}. */
  found: string[]
} {
  const sections: string[] = []
  const found: string[] = []
  for (const file of BOOTSTRAP_ORDER) {
    const text = readCapped(path.join(dir, file))
    if (text === undefined) continue
    sections.push(`## ${file}\n\n${text.trim()}`)
    found.push(file)
  }
  return { soul: sections.join("\n\n"), found }
}

/**
 * The `memory` tool of a persona folder: `add` appends an entry, `replace` swaps a substring,
 * `remove` deletes one, in MEMORY.md (`target: "self"`, default) or USER.md (`"user"`). It writes
 * the disk only: the running soul is a snapshot, so the change is read at the next session. A
 * substring that is not there is an `isError` result, never a silent no-op.
 *
 * @example
 * const ava = agent("ava", { does: "assistant", soul: composeSoul(dir).soul, tools: [memoryTool(dir)] })
 */
export function memoryTool(dir: string): Tool {
  return defineTool({
    name: "memory",
    description:
      "Persist durable memory. action=add appends an entry; replace swaps an existing substring (with); remove deletes one. target=self (MEMORY.md, default) or user (USER.md). Writes persist to disk and load at the START of your NEXT session — they do NOT change your current context.",
    inputSchema: {
      type: "object",
      properties: {
        action: { type: "string", enum: ["add", "replace", "remove"] },
        target: {
          type: "string",
          enum: ["self", "user"],
          description: "self=MEMORY.md (default), user=USER.md",
        },
        text: { type: "string", description: "For add: the entry. For replace/remove: the existing text." },
        with: { type: "string", description: "For replace: the replacement text." },
      },
      required: ["action", "text"],
    },
    run: (args) => {
      const file = path.join(dir, args.target === "user" ? "USER.md" : "MEMORY.md")
      const text = String(args.text)
      const current = readCapped(file) ?? ""
      let next: string
      if (args.action === "add") next = `${current.trimEnd()}\n- ${text}\n`.trimStart()
      else if (args.action === "replace" || args.action === "remove") {
        const at = current.indexOf(text)
        if (at === -1) return { output: `not found: ${text}`, isError: true }
        const replacement = args.action === "replace" ? String(args.with ?? "") : ""
        next = current.slice(0, at) + replacement + current.slice(at + text.length)
      } else return { output: `unknown action: ${String(args.action)}`, isError: true }
      mkdirSync(path.dirname(file), { recursive: true })
      writeFileSync(file, next)
      return `ok (${String(args.action)} → ${path.basename(file)}); loads next session`
    },
  })
}

/** Options of {@link fromDir}. */
export interface FromDirOptions {
  /** Default: the folder's name. */
  name?: string
  /** What a delegating model reads; default `persona agent from <dir>`. */
  does?: string
  /** Default: the runtime's model. */
  model?: string
  /** Tools besides `memory`. */
  tools?: Tool[]
  /** `false` leaves the `memory` tool out (a read-only persona). */
  memory?: boolean
}

/**
 * An agent whose folder is its identity: the soul is {@link composeSoul} of `dir` (a snapshot
 * taken now) and, unless `memory: false`, it has the {@link memoryTool} of the same folder.
 *
 * @throws ConfigError when `dir` is not a string.
 * @example
 * const ava = fromDir("./personas/ava")
 * const result = await ava.run("Good morning", { llm })
 */
export function fromDir(dir: string, opts: FromDirOptions = {}): Agent {
  if (typeof dir !== "string" || dir === "") throw new ConfigError("fromDir needs a folder path")
  const tools = [...(opts.tools ?? [])]
  if (opts.memory !== false) tools.push(memoryTool(dir))
  return agent(opts.name ?? path.basename(path.resolve(dir)), {
    does: opts.does ?? `persona agent from ${dir}`,
    soul: composeSoul(dir).soul,
    ...(opts.model !== undefined ? { model: opts.model } : {}),
    tools,
  })
}
