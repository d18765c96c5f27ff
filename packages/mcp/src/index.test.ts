import { expect, it } from "vitest"
import * as mcp from "./index.js"

// Pins the public surface: adding or removing an export must be a deliberate change here.
it("exports exactly the public MCP surface", () => {
  expect(Object.keys(mcp).sort()).toEqual([
    "McpConnectError",
    "McpHandshakeTimeoutError",
    "connectMcp",
    "loadMcpConfig",
  ])
})

it("its errors carry stable codes and are toolnexus errors", async () => {
  const { ToolnexusError } = await import("@toolnexus/core")
  const connect = new mcp.McpConnectError("files", "boom")
  expect(connect).toBeInstanceOf(ToolnexusError)
  expect([connect.name, connect.code, connect.serverName, connect.reason, connect.message]).toEqual([
    "McpConnectError",
    "TNX_MCP_CONNECT",
    "files",
    "boom",
    'MCP server "files": boom',
  ])
  const timeout = new mcp.McpHandshakeTimeoutError("files", 300)
  expect([timeout.name, timeout.code, timeout.timeoutMs]).toEqual([
    "McpHandshakeTimeoutError",
    "TNX_MCP_TIMEOUT",
    300,
  ])
  expect(mcp.McpConnectError.isInstance(timeout)).toBe(false)
  expect(mcp.McpHandshakeTimeoutError.isInstance(timeout)).toBe(true)
})
