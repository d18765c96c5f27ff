import { readFileSync } from "node:fs"
import { ConfigError } from "@toolnexus/core"
import type { McpOAuthOptions } from "./oauth-options.js"

/** A server started as a child process and spoken to over stdio. */
export interface McpStdioServerConfig {
  /** The program to start (looked up on PATH). */
  command: string
  /** Its arguments. */
  args?: string[]
  /** Added to a minimal inherited environment (PATH, HOME, …), as the SDK does. */
  env?: Record<string, string>
  /** Its working directory; default this process's. */
  cwd?: string
}

/** A remote server over Streamable HTTP, falling back to the older HTTP+SSE transport. */
export interface McpHttpServerConfig {
  /** The server's endpoint (`http:` or `https:`). */
  url: string
  /** Sent with every request; `${NAME}` in a value is read from the environment and never logged. */
  headers?: Record<string, string>
  /**
   * This server's OAuth settings, over the connection's `oauth` (field by field): each
   * machine-to-machine server has its own client credentials.
   */
  oauth?: McpOAuthOptions
}

/** How to reach one MCP server. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig

/**
 * Reads the `{"mcpServers": {...}}` configuration that desktop MCP clients use, from a file path,
 * a JSON string or an already parsed object, and checks every entry.
 *
 * @param pathOrJson - a file path, a JSON text (starting with `{`), or the parsed object.
 * @returns the servers by name (entries marked `"disabled": true` are left out).
 * @throws ConfigError naming the file and the problem: unreadable, not JSON, no `mcpServers`
 *   object, or an entry without a `command` or `url` (or with fields of the wrong type).
 * @example
 * const servers = loadMcpConfig("./claude_desktop_config.json")
 * const mcp = await connectMcp({ servers })
 */
export function loadMcpConfig(pathOrJson: string | object): Record<string, McpServerConfig> {
  let where = "the MCP configuration"
  let parsed: unknown = pathOrJson
  if (typeof pathOrJson === "string") {
    const text = pathOrJson.trimStart()
    if (text.startsWith("{") || text.startsWith("[")) parsed = parseJson(text, where)
    else {
      where = `MCP configuration ${pathOrJson}`
      let content: string
      try {
        content = readFileSync(pathOrJson, "utf8")
      } catch (error) {
        throw new ConfigError(`${where} cannot be read: ${(error as Error).message}`, { cause: error })
      }
      parsed = parseJson(content, where)
    }
  }
  if (!isPlainObject(parsed)) throw new ConfigError(`${where} must be a JSON object`)
  const servers = parsed.mcpServers
  if (!isPlainObject(servers)) {
    throw new ConfigError(`${where} has no "mcpServers" object (expected {"mcpServers": {"name": {...}}})`)
  }
  const result: Record<string, McpServerConfig> = {}
  for (const [name, entry] of Object.entries(servers)) {
    // Some clients keep switched-off servers in the file with `"disabled": true`.
    if (isPlainObject(entry) && entry.disabled === true) continue
    result[name] = checkServerConfig(name, entry, where)
  }
  return result
}

/**
 * @internal Checks one server entry and returns a clean copy. Desktop files carry extra keys
 * (`type`, `disabled`, …); the transport-relevant ones are checked, the rest are ignored.
 */
export function checkServerConfig(
  name: string,
  entry: unknown,
  where = "connectMcp servers",
): McpServerConfig {
  const at = `${where}: server ${JSON.stringify(name)}`
  if (name.length === 0) throw new ConfigError(`${where}: a server name is empty`)
  if (!isPlainObject(entry)) throw new ConfigError(`${at} must be an object with "command" or "url"`)
  if (typeof entry.command === "string" && typeof entry.url === "string") {
    throw new ConfigError(`${at} has both "command" and "url"; give one`)
  }
  if (typeof entry.url === "string") {
    let url: URL
    try {
      url = new URL(entry.url)
    } catch {
      throw new ConfigError(`${at}: "url" is not a valid URL: ${JSON.stringify(entry.url)}`)
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new ConfigError(`${at}: "url" must be http(s), got ${url.protocol}`)
    }
    const config: McpHttpServerConfig = { url: entry.url }
    if (entry.headers !== undefined) config.headers = stringRecord(entry.headers, `${at}: "headers"`)
    // Checked once merged over the connection's options (checkOAuthOptions).
    if (entry.oauth !== undefined) {
      if (!isPlainObject(entry.oauth)) throw new ConfigError(`${at}: "oauth" must be an object`)
      config.oauth = { ...(entry.oauth as McpOAuthOptions) }
    }
    return config
  }
  if (typeof entry.command !== "string" || entry.command.trim() === "") {
    throw new ConfigError(`${at} needs a non-empty "command" (a stdio server) or a "url" (a remote server)`)
  }
  const config: McpStdioServerConfig = { command: entry.command }
  if (entry.args !== undefined) {
    if (!Array.isArray(entry.args) || entry.args.some((a) => typeof a !== "string")) {
      throw new ConfigError(`${at}: "args" must be an array of strings`)
    }
    config.args = [...entry.args]
  }
  if (entry.env !== undefined) config.env = stringRecord(entry.env, `${at}: "env"`)
  if (entry.cwd !== undefined) {
    if (typeof entry.cwd !== "string" || entry.cwd === "")
      throw new ConfigError(`${at}: "cwd" must be a path`)
    config.cwd = entry.cwd
  }
  return config
}

/** @internal True for a remote server entry. */
export function isHttpConfig(config: McpServerConfig): config is McpHttpServerConfig {
  return "url" in config
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new ConfigError(`${where} is not valid JSON: ${(error as Error).message}`, { cause: error })
  }
}

function stringRecord(value: unknown, at: string): Record<string, string> {
  if (!isPlainObject(value) || Object.values(value).some((v) => typeof v !== "string")) {
    throw new ConfigError(`${at} must be an object of string values`)
  }
  return { ...(value as Record<string, string>) }
}

/** @internal */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}
