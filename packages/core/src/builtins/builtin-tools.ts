import { realpathSync, statSync } from "node:fs"
import path from "node:path"
import { ConfigError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"
import { pending } from "../suspension/pending.js"
import { type ApprovalPolicy, approvalNeeded, assertApprovalPolicy } from "../tools/approval-policy.js"
import type { Tool, ToolContext, ToolResult } from "../types.js"
import { applyPatchTool } from "./apply-patch-tool.js"
import { bashTool } from "./bash-tool.js"
import {
  type BuiltinApproval,
  type BuiltinEnv,
  type BuiltinSpec,
  capOutput,
  fail,
  messageOf,
  relativeToRoot,
} from "./builtin-env.js"
import { confinePath } from "./confine-path.js"
import { editTool, readTool, writeTool } from "./file-tools.js"
import { questionTool, todowriteTool } from "./question-tools.js"
import { globTool, grepTool } from "./search-tools.js"
import { webfetchTool } from "./webfetch-tool.js"

import type { BuiltinsOptions } from "./builtin-options.js"

export { BUILTIN_TOOL_NAMES, type BuiltinsOptions } from "./builtin-options.js"

// Output of these is cut at maxOutputChars (write, edit and apply_patch print one short line).
const CAPPED = new Set(["bash", "read", "grep", "glob", "webfetch"])

/**
 * @internal The builtins `builtins` selects: none unless it is `true` or an object (an upgrade
 * never hands a model a shell).
 * @throws ConfigError naming the malformed field.
 */
export function createBuiltinTools(builtins: boolean | BuiltinsOptions | undefined): Tool[] {
  if (builtins === undefined || builtins === false) return []
  if (builtins !== true && !isPlainObject(builtins)) {
    throw new ConfigError(`builtins must be a boolean or an options object, got ${JSON.stringify(builtins)}`)
  }
  const opts: BuiltinsOptions = builtins === true ? {} : builtins
  if (opts.disabled === true || opts.enabled === false) return []
  const env: BuiltinEnv = {
    root: rootOf(opts.root),
    maxOutputChars: positiveInteger(opts.maxOutputChars, "maxOutputChars", 100_000),
    grepTimeoutMs: positiveInteger(opts.grepTimeoutMs, "grepTimeoutMs", 5000),
  }
  const policy = opts.requireApproval ?? "destructive"
  assertApprovalPolicy(policy, "builtins.requireApproval")
  const allowHosts = opts.allowHosts ?? []
  if (!Array.isArray(allowHosts) || !allowHosts.every((h) => typeof h === "string")) {
    throw new ConfigError("builtins.allowHosts must be a list of host names")
  }
  if (opts.tools !== undefined && !isPlainObject(opts.tools))
    throw new ConfigError("builtins.tools must be a record of booleans")
  const specs: BuiltinSpec[] = [
    bashTool,
    readTool,
    writeTool,
    editTool,
    grepTool,
    globTool,
    webfetchTool(allowHosts),
    questionTool,
    applyPatchTool,
    todowriteTool,
  ]
  return specs.filter((spec) => opts.tools?.[spec.name] !== false).map((spec) => wrap(spec, env, policy))
}

function rootOf(root: unknown): string {
  const given = root ?? process.cwd()
  if (typeof given !== "string" || given === "") throw new ConfigError("builtins.root must be a folder path")
  const absolute = path.resolve(given)
  let folder = false
  try {
    folder = statSync(absolute).isDirectory()
  } catch {
    folder = false
  }
  if (!folder) throw new ConfigError(`builtins.root is not an existing folder: ${absolute}`)
  return realpathSync(absolute)
}

function positiveInteger(value: unknown, field: string, otherwise: number): number {
  if (value === undefined) return otherwise
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new ConfigError(`builtins.${field} must be a positive integer, got ${JSON.stringify(value)}`)
  }
  return value
}

/**
 * Confinement, then approval, then the tool: a path outside the root is refused at once, before
 * any approval is asked, so nothing is touched and no human is asked about an impossible call.
 */
function wrap(spec: BuiltinSpec, env: BuiltinEnv, policy: ApprovalPolicy): Tool {
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: spec.inputSchema,
    source: "builtin",
    async execute(rawArgs: Record<string, unknown>, ctx?: ToolContext): Promise<ToolResult> {
      const args = rawArgs ?? {}
      const approval: BuiltinApproval = {
        asks: (asked) =>
          spec.name !== "question" &&
          approvalNeeded(policy, "builtin", spec.name, asked, () => spec.destructive(asked)),
        ask: (asked) =>
          pending({
            kind: "approval",
            prompt: `Approve builtin tool ${spec.name} with ${JSON.stringify(asked)}?`,
            data: { server: "builtin", tool: spec.name, args: asked },
          }),
        request: ctx?.request,
        answer: ctx?.answer,
      }
      const resolved = new Map<string, string>()
      for (const given of spec.paths?.(args) ?? []) {
        const inside = confinePath(env.root, given)
        if (inside === undefined) return fail(`${spec.name}: path outside root: ${given}`)
        resolved.set(given, inside)
      }
      const refused = spec.precheck?.(args)
      if (refused) return refused
      const asks = approval.asks(args)
      if (asks && !ctx?.answer) return approval.ask(args)
      if (asks && ctx?.answer?.ok !== true) return fail(`declined: builtin tool ${spec.name}`)
      const resolve = (given: string) => resolved.get(given) ?? (confinePath(env.root, given) as string)
      try {
        const result = await spec.run(args, {
          env,
          signal: ctx?.signal,
          answer: spec.name === "question" ? ctx?.answer : undefined,
          fetch: ctx?.fetch ?? globalThis.fetch,
          approval,
          resolve,
          show: (given) => (path.isAbsolute(given) ? path.relative(env.root, resolve(given)) || "." : given),
        })
        return CAPPED.has(spec.name) ? capOutput(result, env.maxOutputChars) : result
      } catch (error) {
        return fail(`${spec.name}: ${relativeToRoot(messageOf(error), env.root)}`)
      }
    },
  }
}
