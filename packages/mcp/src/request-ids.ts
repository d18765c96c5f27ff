import { createHash, randomUUID } from "node:crypto"

/**
 * @internal What an MCP tool suspended on, read back from the answer's id when the tool is
 * called again (the answer carries nothing else, and the call may come back in a new process).
 * Ids stay within `^[A-Za-z0-9._:-]{1,200}$`.
 */
export type McpRequestMark =
  | { kind: "approval" }
  | { kind: "login" }
  | { kind: "task" }
  | { kind: "elicit"; digest: string }

const PREFIX = "mcp."

/** @internal A fresh id for an approval request. */
export function approvalRequestId(): string {
  return `${PREFIX}approval.${randomUUID()}`
}

/** @internal A fresh id for a login (OAuth) request. */
export function loginRequestId(): string {
  return `${PREFIX}login.${randomUUID()}`
}

/** @internal A fresh id for the request a call parks on while its task works. */
export function taskRequestId(): string {
  return `${PREFIX}task.${randomUUID()}`
}

/** @internal A fresh id for an elicitation, carrying the digest that matches it on the re-issued call. */
export function elicitRequestId(digest: string): string {
  return `${PREFIX}elicit.${digest}.${randomUUID()}`
}

/** @internal The mark in one of our request ids, or `undefined` for any other id. */
export function markOf(id: string): McpRequestMark | undefined {
  if (!id.startsWith(PREFIX)) return undefined
  const [kind, second] = id.slice(PREFIX.length).split(".")
  if (kind === "approval" || kind === "login" || kind === "task") return { kind }
  if (kind === "elicit" && second) return { kind, digest: second }
  return undefined
}

/**
 * @internal Identifies an elicitation across calls: the same message and schema (form mode) or
 * the same message (URL mode, whose url changes per attempt) give the same digest.
 */
export function elicitationDigest(mode: "form" | "url", message: string, schema: unknown): string {
  const text = mode === "url" ? `url\0${message}` : `form\0${message}\0${canonicalJson(schema)}`
  return createHash("sha256").update(text).digest("hex").slice(0, 24)
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}
