import { ToolnexusError } from "@toolnexus/core"

/** An MCP server could not be started or reached, or closed during the handshake. */
export class McpConnectError extends ToolnexusError {
  /** `error.name`: the class name. */
  override readonly name = "McpConnectError"
  static override readonly family = "TNX_MCP_CONNECT"
  /** The server's name in the configuration. */
  readonly serverName: string
  /** What went wrong, without the server's name (secrets redacted). */
  readonly reason: string
  constructor(serverName: string, reason: string, options?: { cause?: unknown }) {
    super("TNX_MCP_CONNECT", `MCP server ${JSON.stringify(serverName)}: ${reason}`, options)
    this.serverName = serverName
    this.reason = reason
  }
}

/** An MCP server did not finish the initialize handshake within `connectTimeoutMs`. */
export class McpHandshakeTimeoutError extends ToolnexusError {
  /** `error.name`: the class name. */
  override readonly name = "McpHandshakeTimeoutError"
  static override readonly family = "TNX_MCP_TIMEOUT"
  /** The server's name in the configuration. */
  readonly serverName: string
  /** The `connectTimeoutMs` it exceeded. */
  readonly timeoutMs: number
  constructor(serverName: string, timeoutMs: number) {
    super(
      "TNX_MCP_TIMEOUT",
      `MCP server ${JSON.stringify(serverName)} did not answer the initialize handshake within ${timeoutMs} ms`,
    )
    this.serverName = serverName
    this.timeoutMs = timeoutMs
  }
}
