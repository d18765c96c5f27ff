import { ToolnexusError, type ToolnexusErrorCode, isToolnexusError } from "@toolnexus/core"
import { expect, it } from "vitest"
import { McpConnectError, McpHandshakeTimeoutError } from "./errors.js"

// Every mcp error: its name, its TNX_ code (in core's union) and its message, and core's one
// check recognises it.
const TABLE: { error: ToolnexusError; name: string; code: ToolnexusErrorCode; message: string }[] = [
  {
    error: new McpConnectError("files", "spawn npx ENOENT"),
    name: "McpConnectError",
    code: "TNX_MCP_CONNECT",
    message: 'MCP server "files": spawn npx ENOENT',
  },
  {
    error: new McpHandshakeTimeoutError("files", 5000),
    name: "McpHandshakeTimeoutError",
    code: "TNX_MCP_TIMEOUT",
    message: 'MCP server "files" did not answer the initialize handshake within 5000 ms',
  },
]

it.each(TABLE)(
  "$name: name, code and message; isToolnexusError knows it",
  ({ error, name, code, message }) => {
    expect(error).toBeInstanceOf(ToolnexusError)
    expect(error.name).toBe(name)
    expect(error.code).toBe(code)
    expect(error.message).toBe(message)
    expect(isToolnexusError(error, code)).toBe(true)
    expect(isToolnexusError(error, "TNX_CONFIG")).toBe(false)
    expect((error.constructor as typeof ToolnexusError).isInstance(error)).toBe(true)
    // The per-class marker lets another copy of the package recognise it.
    expect((error as unknown as Record<symbol, unknown>)[Symbol.for(`toolnexus.error.${code}`)]).toBe(true)
  },
)
