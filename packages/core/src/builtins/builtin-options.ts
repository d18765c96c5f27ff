// The names and options of the builtins, apart from their code: a toolkit without builtins (the
// default) never loads the tools themselves (DESIGN §7, the cold window).
import type { ApprovalPolicy } from "../tools/approval-policy.js"

/** The built-in tools, in upstream's order. */
export const BUILTIN_TOOL_NAMES = [
  "bash",
  "read",
  "write",
  "edit",
  "grep",
  "glob",
  "webfetch",
  "question",
  "apply_patch",
  "todowrite",
] as const

/** Options of the built-in tools (`ToolkitOptions.builtins`). */
export interface BuiltinsOptions {
  /** `false` ⇒ no builtins. */
  enabled?: boolean
  /** `true` ⇒ no builtins (wins over `enabled`). */
  disabled?: boolean
  /** Names mapped to `false` are left out. */
  tools?: Record<string, boolean>
  /** The folder every path argument must stay inside; default `process.cwd()` at creation. */
  root?: string
  /** Which calls first suspend for approval (server `"builtin"`); default `"destructive"`. */
  requireApproval?: ApprovalPolicy
  /** Hosts webfetch may reach without approval (`*.x` admits x's subdomains). */
  allowHosts?: string[]
  /** bash, read, grep, glob and webfetch output past this is cut (default 100 000). */
  maxOutputChars?: number
  /**
   * How long grep's regular expression may spend matching in one call, in milliseconds (default
   * 5000). The pattern is matched on a worker thread, one per call; past this the thread is ended
   * and the call is an `isError` result `grep: pattern took too long (over <ms> ms); …` with
   * `metadata.timedOut`, so a pattern that backtracks without end (`^(a+)+$`) never stalls the process.
   */
  grepTimeoutMs?: number
}
