import { ConfigError } from "../errors.js"
import { isPlainObject } from "../internal/plain-object.js"

/**
 * Which tool calls first suspend for a human's approval (`kind: "approval"`), shared by MCP
 * servers (§11) and the built-in tools (server `"builtin"`, §16):
 * - `true` / `false`: every call / none;
 * - `"destructive"`: calls that change something (for MCP, tools not annotated read-only or
 *   `destructiveHint: false`; for the builtins, bash, write, edit, apply_patch and webfetch to a
 *   host outside `allowHosts`);
 * - a function deciding per call, given the arguments as the model gave them;
 * - per server: `true`, `false`, `"destructive"`, or the tool names that need it (servers not
 *   listed need none).
 */
export type ApprovalPolicy =
  | boolean
  | "destructive"
  | ((server: string, tool: string, args: Record<string, unknown>) => boolean)
  | Record<string, boolean | "destructive" | string[]>

/** @internal Refuses a malformed policy, naming the option. */
export function assertApprovalPolicy(
  policy: unknown,
  field: string,
): asserts policy is ApprovalPolicy | undefined {
  if (policy === undefined || typeof policy === "boolean" || policy === "destructive") return
  if (typeof policy === "function") return
  if (!isPlainObject(policy)) {
    throw new ConfigError(
      `${field} must be a boolean, "destructive", a function or a record by server; got ${JSON.stringify(policy)}`,
    )
  }
  for (const [server, rule] of Object.entries(policy)) {
    const valid =
      typeof rule === "boolean" ||
      rule === "destructive" ||
      (Array.isArray(rule) && rule.every((t) => typeof t === "string"))
    if (!valid) {
      throw new ConfigError(
        `${field}.${server} must be true, false, "destructive" or a list of tool names; got ${JSON.stringify(rule)}`,
      )
    }
  }
}

/**
 * @internal True when `policy` wants approval for this call; `destructive` says whether the call
 * changes something, for the `"destructive"` rule.
 */
export function approvalNeeded(
  policy: ApprovalPolicy | undefined,
  server: string,
  tool: string,
  args: Record<string, unknown>,
  destructive: () => boolean,
): boolean {
  if (policy === undefined || policy === false) return false
  if (policy === true) return true
  if (policy === "destructive") return destructive()
  if (typeof policy === "function") return policy(server, tool, args) === true
  const rule = policy[server]
  if (rule === undefined || rule === false) return false
  if (rule === true) return true
  if (rule === "destructive") return destructive()
  return rule.includes(tool)
}
