import { ConfigError, type Tool } from "@toolnexus/core"
import { type ApprovalPolicy, checkApprovalPolicy } from "./approval-policy.js"
import type { ClientFeatures, McpLogEntry, McpRoot, McpSamplingOptions } from "./client-features.js"
import { type McpServerConfig, checkServerConfig, isHttpConfig, isPlainObject } from "./config.js"
import { McpTool, type McpToolEnv, signInTool } from "./mcp-tool.js"
import { type McpOAuthOptions, checkOAuthOptions } from "./oauth-options.js"
import { ServerConnection } from "./server-connection.js"
import { type TokenStore, memoryTokenStore } from "./token-store.js"
import { toolNameFor } from "./tool-names.js"

/** Options of {@link connectMcp}. */
export interface ConnectMcpOptions {
  /** The servers by name; the name prefixes their tools (`<server>__<tool>`). */
  servers: Record<string, McpServerConfig>
  /** Which calls first suspend for approval. Default: none. */
  requireApproval?: ApprovalPolicy
  /** Where OAuth tokens of remote servers are kept. Default: in memory, for this process. */
  tokenStore?: TokenStore
  /**
   * OAuth client settings for remote servers that answer 401: a user's login (the default) or a
   * machine-to-machine grant. A server's own `oauth` is merged over these.
   */
  oauth?: McpOAuthOptions
  /**
   * The MCP revisions to speak, most preferred first. Default: 2026-07-28, negotiated with
   * `server/discover`, falling back to `initialize` and 2025-11-25 (or an older revision) for
   * servers that do not speak it. Only 2026-07-28 ⇒ pinned: a server without it fails to
   * connect. Only older revisions ⇒ `initialize` alone.
   */
  protocolVersions?: string[]
  /** How long a server may take to start and answer `initialize`. Default 10 s. */
  connectTimeoutMs?: number
  /** How long one tool call may take (progress notifications restart it). Default 60 s. */
  callTimeoutMs?: number
  /** Longer outputs are cut, saying so. Default 100,000 characters. */
  maxOutputChars?: number
  /** Roots offered to servers that ask (`roots/list`). Default: none offered (the request is refused). */
  roots?: McpRoot[]
  /**
   * Serves servers' sampling requests: `true` with the model of the client running the call,
   * or `{ model?, maxTokens?, requireApproval? }`. Default: not offered (refused).
   */
  sampling?: true | McpSamplingOptions
  /** Receives the servers' log messages (`notifications/message`). Default: dropped. */
  onLog?: (entry: McpLogEntry) => void
}

/** One server's state, as {@link McpConnection.servers} reports it. */
export interface McpServerStatus {
  /** The server's name in `servers`. */
  name: string
  /** `ready` once connected; `failed` when it could not start or connect. */
  status: "ready" | "failed"
  /** How many tools it offers now. */
  tools: number
  /** Why it failed (secrets redacted). */
  error?: string
  /** The TNX code of the failure: `TNX_MCP_CONNECT`, `TNX_MCP_TIMEOUT`. */
  code?: string
  /** Set when the server waits for an OAuth login: where the user signs in. */
  authorizationUrl?: string
  /** The child process of a stdio server, while it runs. */
  pid?: number
}

/** The connected servers and their tools. */
export interface McpConnection {
  /**
   * The servers' tools, `source: "mcp"`, named `<server>__<tool>`. The list follows
   * `tools/list_changed`; build a toolkit from it per run to offer new tools.
   */
  tools(): Tool[]
  /** Each configured server's state, in configuration order. */
  servers(): McpServerStatus[]
  /**
   * Completes the OAuth login of a remote server from the authorization server's redirect
   * (the full callback URL, or its `code`): the tokens go to the token store, the server
   * reconnects. Then answer the `authorization` request `ok: true`.
   *
   * @throws ConfigError for an unknown server; McpConnectError when the login fails.
   */
  finishLogin(server: string, callback: string): Promise<void>
  /** Ends every session and child process. */
  close(): Promise<void>
}

const DEFAULT_REDIRECT = "http://localhost/toolnexus/oauth/callback"

/**
 * Connects to MCP servers over stdio (child processes) or Streamable HTTP (falling back to
 * HTTP+SSE) and offers their tools. A server that fails to start is reported by `servers()`;
 * the others work. Approval, elicitation and OAuth logins become suspensions: with a `waitFor`
 * they are answered inline, without one the run halts durably and the answer resumes it.
 *
 * @throws ConfigError for a malformed server entry or approval policy (before anything starts).
 * @example
 * const mcp = await connectMcp({
 *   servers: { files: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] } },
 *   requireApproval: { files: ["write_file", "edit_file"] },
 * })
 * const toolkit = await createToolkit({ extraTools: mcp.tools() })
 */
export async function connectMcp(options: ConnectMcpOptions): Promise<McpConnection> {
  const {
    servers,
    requireApproval,
    tokenStore = memoryTokenStore(),
    oauth = { redirectUrl: DEFAULT_REDIRECT },
    connectTimeoutMs = 10_000,
    callTimeoutMs = 60_000,
    maxOutputChars = 100_000,
  } = options ?? ({} as ConnectMcpOptions)
  if (!isPlainObject(servers))
    throw new ConfigError('connectMcp: "servers" must be an object of server configs')
  const configs = Object.entries(servers).map(
    ([name, config]) => [name, checkServerConfig(name, config)] as const,
  )
  checkApprovalPolicy(requireApproval, Object.keys(servers))
  for (const [key, value] of Object.entries({ connectTimeoutMs, callTimeoutMs, maxOutputChars })) {
    if (!Number.isFinite(value) || value <= 0)
      throw new ConfigError(`connectMcp: "${key}" must be a positive number`)
  }
  if (!isPlainObject(oauth)) throw new ConfigError('connectMcp: "oauth" must be an object')
  const features = checkFeatures(options)
  const protocolVersions = checkProtocolVersions(options.protocolVersions)
  const oauthOf = new Map<string, McpOAuthOptions>()
  for (const [name, config] of configs) {
    if (!isHttpConfig(config)) continue
    const merged = config.oauth ? { ...oauth, ...config.oauth } : oauth
    const at = config.oauth ? `connectMcp: server ${JSON.stringify(name)}: "oauth"` : 'connectMcp: "oauth"'
    oauthOf.set(name, checkOAuthOptions(merged, at))
  }

  const env: McpToolEnv = { policy: requireApproval, maxOutputChars }
  const registry = new ToolRegistry(env)
  const connections = configs.map(
    ([name, config]) =>
      new ServerConnection(name, config, {
        connectTimeoutMs,
        callTimeoutMs,
        tokenStore,
        oauth: oauthOf.get(name) ?? oauth,
        features,
        ...(protocolVersions ? { protocolVersions } : {}),
        onToolsChanged: () => registry.sync(connections),
      }),
  )
  await Promise.all(connections.map((c) => c.connect()))
  registry.sync(connections)
  let closed = false

  return {
    tools: () => {
      registry.sync(connections)
      return registry.current()
    },
    servers: () => connections.map(statusOf),
    async finishLogin(server, callback) {
      const connection = connections.find((c) => c.name === server)
      if (!connection) {
        throw new ConfigError(
          `unknown MCP server ${JSON.stringify(server)} (servers: ${connections.map((c) => c.name).join(", ") || "none"})`,
        )
      }
      await connection.finishLogin(callback)
      registry.sync(connections)
    },
    async close() {
      if (closed) return
      closed = true
      await Promise.all(connections.map((c) => c.close()))
    },
  }
}

const REVISION = /^\d{4}-\d{2}-\d{2}$/

function checkProtocolVersions(versions: unknown): string[] | undefined {
  if (versions === undefined) return undefined
  if (
    !Array.isArray(versions) ||
    versions.length === 0 ||
    versions.some((v) => typeof v !== "string" || !REVISION.test(v))
  )
    throw new ConfigError(
      'connectMcp: "protocolVersions" must be a non-empty array of MCP revisions such as "2026-07-28"',
    )
  return [...versions]
}

function checkFeatures(options: ConnectMcpOptions): ClientFeatures {
  const { roots, sampling, onLog } = options
  const features: ClientFeatures = {}
  if (roots !== undefined) {
    if (
      !Array.isArray(roots) ||
      roots.some((r) => !isPlainObject(r) || typeof r.uri !== "string" || r.uri === "")
    )
      throw new ConfigError('connectMcp: "roots" must be an array of { uri, name? }')
    features.roots = roots.map((r) => ({ ...r }))
  }
  if (sampling !== undefined) {
    const given = sampling === true ? {} : sampling
    if (!isPlainObject(given))
      throw new ConfigError('connectMcp: "sampling" must be true or { model?, maxTokens?, requireApproval? }')
    for (const key of ["model", "client"] as const) {
      const model = given[key]
      if (model !== undefined && typeof (model as { run?: unknown }).run !== "function")
        throw new ConfigError(`connectMcp: "sampling.${key}" must be a toolnexus Client`)
    }
    const maxTokens: unknown = given.maxTokens
    if (
      maxTokens !== undefined &&
      !(typeof maxTokens === "number" && Number.isInteger(maxTokens) && maxTokens > 0)
    )
      throw new ConfigError('connectMcp: "sampling.maxTokens" must be a positive integer')
    features.sampling = given
  }
  if (onLog !== undefined) {
    if (typeof onLog !== "function") throw new ConfigError('connectMcp: "onLog" must be a function')
    features.onLog = onLog
  }
  return features
}

/**
 * Names and tool objects across refreshes: a server tool keeps its name and object for the
 * life of the connection, so transcripts and toolkits built earlier stay valid.
 */
class ToolRegistry {
  readonly #env: McpToolEnv
  readonly #byKey = new Map<string, McpTool>()
  readonly #signIn = new Map<string, Tool>()
  readonly #taken = new Set<string>()
  #current: Tool[] = []

  constructor(env: McpToolEnv) {
    this.#env = env
  }

  current(): Tool[] {
    return [...this.#current]
  }

  sync(connections: readonly ServerConnection[]): void {
    const current: Tool[] = []
    for (const server of connections) {
      if (server.usesLogin) current.push(this.#signInFor(server))
      for (const definition of server.tools) {
        const key = `${server.name}\0${definition.name}`
        let tool = this.#byKey.get(key)
        if (tool) tool.update(definition)
        else {
          const name = toolNameFor(server.name, definition.name, this.#taken)
          this.#taken.add(name)
          tool = new McpTool(name, server, definition, this.#env)
          this.#byKey.set(key, tool)
        }
        current.push(tool)
      }
    }
    this.#current = current
  }

  #signInFor(server: ServerConnection): Tool {
    let tool = this.#signIn.get(server.name)
    if (!tool) {
      const name = toolNameFor(server.name, "sign_in", this.#taken)
      this.#taken.add(name)
      tool = signInTool(name, server)
      this.#signIn.set(server.name, tool)
    }
    return tool
  }
}

function statusOf(server: ServerConnection): McpServerStatus {
  const status: McpServerStatus = {
    name: server.name,
    status: server.status === "ready" ? "ready" : "failed",
    tools: server.status === "ready" ? server.tools.length : 0,
  }
  const error = server.error
  if (error && server.status !== "ready") {
    status.error = error.message
    const code = (error as { code?: unknown }).code
    if (typeof code === "string") status.code = code
  }
  const url = server.authorizationUrl
  if (server.status === "login" && url) status.authorizationUrl = url
  const pid = server.pid
  if (pid !== undefined) status.pid = pid
  return status
}
