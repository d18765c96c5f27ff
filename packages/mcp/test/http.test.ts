import { type ChildProcess, spawn } from "node:child_process"
import { type Server as HttpServer, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { McpServer, type RegisteredTool } from "@modelcontextprotocol/sdk/server/mcp.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { createToolkit } from "@toolnexus/core"
import { afterEach, describe, expect, it, vi } from "vitest"
import { z } from "zod"
import { type McpConnection, connectMcp } from "../src/index.js"
import { readBody, serveMcp } from "./http-server.js"
import { TEST_SERVER } from "./paths.js"

const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function connect(opts: Parameters<typeof connectMcp>[0]): Promise<McpConnection> {
  const mcp = await connectMcp(opts)
  cleanups.push(() => mcp.close())
  return mcp
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time")
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe("Streamable HTTP servers", () => {
  it("follows tools/list_changed: new tools appear, changed ones update in place, removed ones say so", async () => {
    const sessions: { server: McpServer; greet: RegisteredTool; old: RegisteredTool }[] = []
    let version = 1
    const served = await serveMcp(() => {
      const server = new McpServer({ name: "changing", version: "1.0.0" })
      const greet = server.registerTool(
        "greet",
        { description: "Greets v1", inputSchema: { who: z.string() } },
        async (a) => ({ content: [{ type: "text", text: `hello ${a.who} (v${version})` }] }),
      )
      const old = server.registerTool("old", { description: "Goes away" }, async () => ({
        content: [{ type: "text", text: "old" }],
      }))
      sessions.push({ server, greet, old })
      return server
    })
    cleanups.push(() => served.close())
    const mcp = await connect({ servers: { live: { url: served.url } } })
    const before = mcp.tools()
    const greet = before.find((t) => t.name === "live__greet")
    expect(before.map((t) => t.name)).toEqual(["live__greet", "live__old"])

    const session = sessions[0] as (typeof sessions)[number]
    version = 2
    session.greet.update({ description: "Greets v2" })
    session.old.remove()
    session.server.registerTool("added", { description: "New" }, async () => ({
      content: [{ type: "text", text: "new!" }],
    }))
    await until(() => mcp.tools().some((t) => t.name === "live__added"))

    expect(mcp.tools().map((t) => t.name)).toEqual(["live__greet", "live__added"])
    expect(mcp.tools().find((t) => t.name === "live__greet")).toBe(greet) // the same object, updated
    expect(greet?.description).toBe("Greets v2")
    const old = before.find((t) => t.name === "live__old")
    expect(await old?.execute({})).toMatchObject({
      isError: true,
      output: 'MCP server "live" no longer offers the tool old',
    })
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    expect((await toolkit.execute("live__added", {})).output).toBe("new!")
  })

  it("a server process that dies mid-call gives an isError result; the next call reconnects to its successor", async () => {
    const port = await freePort()
    let child = await startHttpChild(port)
    cleanups.push(() => child.kill())
    const mcp = await connect({ servers: { remote: { url: `http://127.0.0.1:${port}/mcp` } } })
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    expect((await toolkit.execute("remote__ping", {})).output).toBe("pong")

    const started = Date.now()
    const died = await toolkit.execute("remote__die", {})
    expect(died.isError).toBe(true)
    expect(died.output).toMatch(
      /^MCP server "remote" went away during the call to die \(stopped answering: .*\); the next call reconnects$/,
    )
    expect(Date.now() - started).toBeLessThan(5_000) // not the call's 60 s limit
    expect(mcp.servers()[0]).toMatchObject({ status: "failed", code: "TNX_MCP_CONNECT" })
    const down = await toolkit.execute("remote__ping", {})
    expect(down).toMatchObject({
      isError: true,
      output: expect.stringMatching(/^MCP server "remote" is unavailable/),
    })

    child = await startHttpChild(port)
    // Past the 500 ms backoff of the failed attempt, on the test's clock (only Date is faked).
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 1_100 })
    try {
      expect((await toolkit.execute("remote__ping", {})).output).toBe("pong")
    } finally {
      vi.useRealTimers()
    }
    expect(mcp.servers()[0]?.status).toBe("ready")
  })

  it("falls back to HTTP+SSE for servers that predate Streamable HTTP", async () => {
    const sessions = new Map<string, SSEServerTransport>()
    const http = createServer(async (req, res) => {
      if (req.method === "GET" && req.url === "/sse") {
        const transport = new SSEServerTransport("/messages", res)
        sessions.set(transport.sessionId, transport)
        const server = new McpServer({ name: "legacy", version: "1.0.0" })
        server.registerTool("hello", { description: "Says hello" }, async () => ({
          content: [{ type: "text", text: "hello over SSE" }],
        }))
        await server.connect(transport)
        return
      }
      if (req.method === "POST" && req.url?.startsWith("/messages")) {
        const id = new URL(req.url, "http://x").searchParams.get("sessionId") ?? ""
        await sessions.get(id)?.handlePostMessage(req, res, JSON.parse(await readBody(req)))
        return
      }
      res.writeHead(405).end()
    })
    const port = await listen(http)
    const mcp = await connect({ servers: { legacy: { url: `http://127.0.0.1:${port}/sse` } } })
    expect(mcp.servers()[0]?.status).toBe("ready")
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    expect((await toolkit.execute("legacy__hello", {})).output).toBe("hello over SSE")
  })

  it("a URL that speaks neither transport fails that server, naming both attempts", async () => {
    const served = await serveMcp(() => new McpServer({ name: "x", version: "1.0.0" }))
    cleanups.push(() => served.close())
    const mcp = await connect({ servers: { wrong: { url: served.url.replace("/mcp", "/nope") } } })
    expect(mcp.servers()[0]).toMatchObject({ status: "failed", code: "TNX_MCP_CONNECT" })
    expect(mcp.servers()[0]?.error).toMatch(/^MCP server "wrong": Streamable HTTP: .*404.*; HTTP\+SSE: .*404/)
  })

  it("a server that never answers the handshake times out with TNX_MCP_TIMEOUT", async () => {
    const http = createServer(() => {}) // accepts, never answers
    const port = await listen(http)
    const mcp = await connect({
      servers: { hung: { url: `http://127.0.0.1:${port}/mcp` } },
      connectTimeoutMs: 300,
    })
    expect(mcp.servers()[0]).toMatchObject({ status: "failed", code: "TNX_MCP_TIMEOUT", tools: 0 })
    expect(mcp.tools()).toEqual([])
  })

  // biome-ignore lint/suspicious/noTemplateCurlyInString: names the placeholder syntax
  it("sends configured headers with ${ENV} filled in and keeps their values out of errors", async () => {
    process.env.TNX_TEST_MCP_KEY = "secret-header-value-123"
    cleanups.push(() => {
      delete process.env.TNX_TEST_MCP_KEY
    })
    const seen: string[] = []
    const served = await serveMcp(
      () => {
        const server = new McpServer({ name: "h", version: "1.0.0" })
        server.registerTool("fail", { description: "Fails" }, async () => {
          throw new Error("upstream rejected key secret-header-value-123")
        })
        return server
      },
      (req) => {
        seen.push(String(req.headers["x-api-key"]))
        return false
      },
    )
    cleanups.push(() => served.close())
    const mcp = await connect({
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${NAME} placeholder, read from the environment
      servers: { h: { url: served.url, headers: { "x-api-key": "${TNX_TEST_MCP_KEY}" } } },
    })
    expect(seen[0]).toBe("secret-header-value-123")
    const result = await mcp.tools()[0]?.execute({})
    expect(result?.isError).toBe(true)
    expect(JSON.stringify(result)).not.toContain("secret-header-value-123")
    expect(result?.output).toContain("***")
  })
})

/** Listens on a free port of 127.0.0.1 until the test ends. */
async function listen(http: HttpServer): Promise<number> {
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r))
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        http.closeAllConnections()
        http.close(() => r())
      }),
  )
  return (http.address() as AddressInfo).port
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

function startHttpChild(port: number): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TEST_SERVER, "http", String(port)], {
      stdio: ["ignore", "pipe", "inherit"],
    })
    child.stdout?.once("data", () => resolve(child))
    child.once("error", reject)
  })
}
