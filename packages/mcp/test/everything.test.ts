import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type McpServerConfig, connectMcp } from "../src/index.js"
import { EVERYTHING, UNDER_LOAD } from "./paths.js"

// The real reference server, @modelcontextprotocol/server-everything 2026.8.31 (the newest on
// npm). It is built on the 1.x SDK, so it speaks 2025-11-25 and older: a 2026-07-28 client meets
// it through the fallback, and a client pinned to 2026-07-28 is refused, saying why.
let http: ChildProcess | undefined
let httpUrl = ""

beforeAll(async () => {
  const port = await freePort()
  http = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  })
  // It says on stderr when it listens.
  await new Promise<void>((resolve, reject) => {
    let said = ""
    http?.stderr?.on("data", (chunk: Buffer) => {
      said += chunk.toString()
      if (said.includes("listening")) resolve()
    })
    http?.once("exit", (code) => reject(new Error(`server-everything exited (${code}): ${said}`)))
  })
  httpUrl = `http://127.0.0.1:${port}/mcp`
})
afterAll(() => {
  http?.kill()
})

const transports: [string, () => McpServerConfig][] = [
  ["stdio", () => ({ command: process.execPath, args: [EVERYTHING, "stdio"] })],
  ["streamable HTTP", () => ({ url: httpUrl })],
]

describe.each(transports)("server-everything over %s", (_name, config) => {
  for (const protocolVersions of [undefined, ["2025-11-25"]]) {
    it(`connects with ${protocolVersions ? "2025-11-25 pinned" : "the default negotiation (2026-07-28 first)"} and runs its tools`, async () => {
      const mcp = await connectMcp({
        ...UNDER_LOAD,
        servers: { everything: config() },
        ...(protocolVersions ? { protocolVersions } : {}),
      })
      try {
        expect(mcp.servers()[0]).toMatchObject({ status: "ready" })
        const tool = (name: string) => mcp.tools().find((t) => t.name === `everything__${name}`)
        expect(await tool("echo")?.execute({ message: "hi" }, {})).toMatchObject({
          isError: false,
          output: "Echo: hi",
        })
        expect((await tool("get-sum")?.execute({ a: 2, b: 3 }, {}))?.output).toContain("5")
        // An elicitation of the 2025-11-25 kind (a server request during the call), inline.
        const elicited = await tool("trigger-elicitation-request")?.execute(
          {},
          { resolve: async (req) => ({ id: req.id, ok: false }) },
        )
        expect(elicited?.isError).toBe(false)
        expect(elicited?.output).toMatch(/declin/i)
      } finally {
        await mcp.close()
      }
    })
  }

  it("pinned to 2026-07-28 it is refused, naming the revision", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { everything: config() },
      protocolVersions: ["2026-07-28"],
    })
    try {
      expect(mcp.servers()[0]).toMatchObject({ status: "failed", code: "TNX_MCP_CONNECT" })
      expect(mcp.servers()[0]?.error).toMatch(/2026-07-28/)
    } finally {
      await mcp.close()
    }
  })
})

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}
