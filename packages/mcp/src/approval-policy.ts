import { type ApprovalPolicy, ConfigError } from "@toolnexus/core"
import { isPlainObject } from "./config.js"

/** Which calls first suspend for a human's approval: core's policy, shared with the built-in tools. */
export type { ApprovalPolicy }

/** The MCP tool annotations the policy reads (the server's hints; untrusted). */
export interface ToolAnnotations {
  /** A display name for the tool. */
  title?: string
  /** The tool changes nothing: the `"destructive"` policy does not ask before its calls. */
  readOnlyHint?: boolean
  /** `false`: its changes are only additive, and the `"destructive"` policy does not ask; default true. */
  destructiveHint?: boolean
  /** Repeating a call with the same arguments has no further effect. */
  idempotentHint?: boolean
  /** The tool reaches outside the server (the web, other systems). */
  openWorldHint?: boolean
  [key: string]: unknown
}

/** @internal Refuses a malformed policy or one naming a server that is not configured. */
export function checkApprovalPolicy(policy: unknown, servers: readonly string[]): void {
  if (policy === undefined || typeof policy === "boolean" || policy === "destructive") return
  if (typeof policy === "function") return
  if (!isPlainObject(policy)) {
    throw new ConfigError(
      `requireApproval must be a boolean, "destructive", a function or a record by server; got ${JSON.stringify(policy)}`,
    )
  }
  for (const [server, rule] of Object.entries(policy)) {
    if (!servers.includes(server)) {
      throw new ConfigError(
        `requireApproval names server ${JSON.stringify(server)}, which is not configured (servers: ${servers.join(", ") || "none"})`,
      )
    }
    const valid =
      typeof rule === "boolean" ||
      rule === "destructive" ||
      (Array.isArray(rule) && rule.every((t) => typeof t === "string"))
    if (!valid) {
      throw new ConfigError(
        `requireApproval.${server} must be true, false, "destructive" or a list of tool names; got ${JSON.stringify(rule)}`,
      )
    }
  }
}

/** @internal True when the policy wants a human to approve this call first. */
export function needsApproval(
  policy: ApprovalPolicy | undefined,
  server: string,
  tool: string,
  args: Record<string, unknown>,
  annotations: ToolAnnotations | undefined,
): boolean {
  if (policy === undefined || policy === false) return false
  if (policy === true) return true
  if (policy === "destructive") return isDestructive(annotations)
  if (typeof policy === "function") return policy(server, tool, args) === true
  const rule = policy[server]
  if (rule === undefined || rule === false) return false
  if (rule === true) return true
  if (rule === "destructive") return isDestructive(annotations)
  return rule.includes(tool)
}

/** MCP defaults: a tool may be destructive unless it says it is read-only or not destructive. */
function isDestructive(annotations: ToolAnnotations | undefined): boolean {
  if (annotations?.readOnlyHint === true) return false
  return annotations?.destructiveHint !== false
}
