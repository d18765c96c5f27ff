import path from "node:path"
import type { Answer, JSONSchema, Request, ToolResult } from "../types.js"

/** @internal What every builtin runs in. */
export interface BuiltinEnv {
  /** The real path of the root folder. */
  root: string
  maxOutputChars: number
  /** How long grep's pattern may spend matching in one call before the call fails (ms). */
  grepTimeoutMs: number
}

/** @internal One builtin before confinement and approval are wrapped around it. */
export interface BuiltinSpec {
  name: string
  description: string
  inputSchema: JSONSchema
  /** The path arguments to confine to the root, as given. */
  paths?(args: Record<string, unknown>): string[]
  /** A refusal decided from the arguments alone, returned before any approval. */
  precheck?(args: Record<string, unknown>): ToolResult | undefined
  /** Whether the call changes something (the `"destructive"` approval rule). */
  destructive(args: Record<string, unknown>): boolean
  run(args: Record<string, unknown>, ctx: BuiltinCallContext): Promise<ToolResult>
}

/** @internal The per-call context of a builtin's `run`. */
export interface BuiltinCallContext {
  env: BuiltinEnv
  signal: AbortSignal | undefined
  /** Resolves a path argument already checked to be inside the root. */
  resolve(given: string): string
  /** A path argument as a message names it: as given, or relative to the root when given absolute. */
  show(given: string): string
  answer?: { ok: boolean; data?: Record<string, unknown> } | undefined
  /** The client's `fetch` seam, else the global `fetch`. */
  fetch: typeof fetch
  /** The approval rule applied to other arguments (a webfetch redirect hop), as to the call's own. */
  approval: BuiltinApproval
}

/** @internal What a builtin needs to ask for approval of more than its arguments. */
export interface BuiltinApproval {
  /** Whether the policy asks before a call with these arguments. */
  asks(args: Record<string, unknown>): boolean
  /** The suspension asking about these arguments, as the call itself would be asked. */
  ask(args: Record<string, unknown>): ToolResult
  /** With `answer`: the request this retry answers. */
  request: Request | undefined
  answer: Answer | undefined
}

/** @internal A successful result. */
export const ok = (output: string, metadata?: Record<string, unknown>): ToolResult =>
  metadata ? { output, isError: false, metadata } : { output, isError: false }

/** @internal A failed result. */
export const fail = (output: string, metadata?: Record<string, unknown>): ToolResult =>
  metadata ? { output, isError: true, metadata } : { output, isError: true }

/** @internal Cuts output past the cap, with a closing note and `metadata.truncated`. */
export function capOutput(result: ToolResult, max: number): ToolResult {
  if (result.output.length <= max) return result
  const cut = `${result.output.slice(0, max)}\n[output truncated: ${result.output.length - max} more characters]`
  return { ...result, output: cut, metadata: { ...result.metadata, truncated: true } }
}

/** @internal The message of a thrown value. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/**
 * @internal `text` with every path under `root` written relative to it (`root` itself as `.`): a
 * message a builtin returns never shows where the host keeps its files.
 */
export function relativeToRoot(text: string, root: string): string {
  const escaped = `${root}`.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")
  const sep = path.sep.replace(/\\/g, "\\\\")
  // The root followed by a separator, or by something that cannot continue a file name.
  const under = new RegExp(`${escaped}(?:${sep}|(?![^\\s'"\`:,;)\\]]))`, "g")
  return text.replace(under, (found) => (found.length > root.length ? "" : "."))
}
