import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { connectMcp } from "../src/index.js"
import { UNDER_LOAD } from "./paths.js"

const SERVER = fileURLToPath(new URL("./fixtures/v2-stdio-server.mjs", import.meta.url))
/** The v2 SDK's `serveStdio`: both revisions on one pipe. */
const served = { command: process.execPath, args: [SERVER, "serve"] }
/** A hand-wired v2 `McpServer` on a `StdioServerTransport`: the SDK answers `server/discover` -32601. */
const wired = { command: process.execPath, args: [SERVER, "connect"] }

async function howCalled(
  config: { command: string; args: string[] },
  protocolVersions?: string[],
): Promise<string> {
  const mcp = await connectMcp({
    ...UNDER_LOAD,
    servers: { s: config },
    ...(protocolVersions ? { protocolVersions } : {}),
  })
  try {
    const status = mcp.servers()[0]
    if (status?.status !== "ready") return `failed: ${status?.error}`
    const tool = mcp.tools().find((t) => t.name === "s__era")
    return (await tool?.execute({}, {}))?.output ?? "no tool"
  } finally {
    await mcp.close()
  }
}

describe("2026-07-28 over stdio", () => {
  it("a server served with serveStdio is met on the stateless wire by default, and with initialize when pinned older", async () => {
    expect(await howCalled(served)).toBe("stateless")
    expect(await howCalled(served, ["2026-07-28"])).toBe("stateless")
    expect(await howCalled(served, ["2025-11-25"])).toBe("initialize")
  })

  it("a server that answers server/discover 'method not found' is an older one: it is met with initialize", async () => {
    expect(await howCalled(wired)).toBe("initialize")
    // Pinned to 2026-07-28 there is no fallback, and the failure says so.
    expect(await howCalled(wired, ["2026-07-28"])).toMatch(
      /^failed: MCP server "s": .*did not offer pinned protocol version 2026-07-28 via server\/discover/,
    )
  })
})
