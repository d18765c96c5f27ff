import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { type Answer, ConfigError, type Request, createToolkit } from "@toolnexus/core"
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { McpConnectError, type McpConnection, type TokenStore, connectMcp } from "../src/index.js"
import { type OAuthFixture, serveOAuthMcp } from "./oauth-server.js"
import { scriptedClient } from "./scripted-model.js"

let fixture: OAuthFixture
const records = new Map<string, unknown>()
const tokenStore: TokenStore = {
  get: async (server) => records.get(server),
  set: async (server, value) => {
    records.set(server, structuredClone(value))
  },
}
const printed: string[] = []
let mcp: McpConnection

beforeAll(async () => {
  for (const method of ["log", "info", "warn", "error", "debug"] as const)
    vi.spyOn(console, method).mockImplementation((...args) => void printed.push(args.map(String).join(" ")))
  fixture = await serveOAuthMcp(() => {
    const server = new McpServer({ name: "secure", version: "1.0.0" })
    server.registerTool("whoami", { description: "Who am I" }, async (extra) => ({
      content: [{ type: "text", text: `client ${extra.authInfo?.clientId}` }],
    }))
    return server
  })
  mcp = await connectMcp({
    servers: { secure: { url: fixture.url } },
    tokenStore,
    oauth: { redirectUrl: "http://127.0.0.1:9/oauth/callback" },
  })
})
afterAll(async () => {
  await mcp?.close()
  await fixture?.close()
  vi.restoreAllMocks()
})

it("a 401 with OAuth metadata becomes an authorization request; after the login the retry uses the stored tokens", async () => {
  expect(mcp.servers()[0]).toMatchObject({ name: "secure", status: "failed", tools: 0 })
  expect(mcp.servers()[0]?.authorizationUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/authorize\?/)
  expect(mcp.tools().map((t) => t.name)).toEqual(["secure__sign_in"])

  const client = scriptedClient([
    { name: "secure__sign_in", arguments: {} },
    { name: "secure__whoami", arguments: {} },
  ])
  const halted = await client.run("who am I there?", {
    toolkit: await createToolkit({ extraTools: mcp.tools() }),
  })
  expect(halted.status).toBe("pending")
  const request = halted.pending as Request
  expect(request).toMatchObject({ kind: "authorization", data: { server: "secure" } })
  expect(request.url).toBe(mcp.servers()[0]?.authorizationUrl)

  // A second attempt before the login hands out the same URL (its verifier stays valid).
  const again = await mcp.tools()[0]?.execute({})
  expect((again?.metadata?.pending as Request | undefined)?.url).toBe(request.url)

  await expect(
    mcp.finishLogin("secure", "http://127.0.0.1:9/oauth/callback?code=x&state=forged"),
  ).rejects.toThrow(McpConnectError)
  await expect(mcp.finishLogin("nope", "x")).rejects.toThrow(ConfigError)

  const callback = await fixture.login(request.url as string)
  await mcp.finishLogin("secure", callback)
  expect(mcp.servers()[0]).toMatchObject({ status: "ready", tools: 1 })
  expect(fixture.issued.length).toBeGreaterThan(0)

  const answer: Answer = { id: request.id, ok: true }
  const done = await client.continueRun({
    toolkit: await createToolkit({ extraTools: mcp.tools() }),
    messages: halted.messages,
    pending: request,
    answer,
  })
  expect(done.status).toBe("done")
  expect(done.toolCalls.map((c) => c.output)).toEqual([
    "signed in to MCP server secure; its tools: whoami",
    expect.stringMatching(/^client client-/),
  ])
  expect(fixture.authorizedCalls()).toBeGreaterThan(0)

  // Never a token outside the token store.
  const everything = JSON.stringify({
    halted,
    done,
    request,
    answer,
    servers: mcp.servers(),
    tools: mcp.tools().map((t) => [t.name, t.description, t.inputSchema]),
    printed,
  })
  for (const token of fixture.issued) expect(everything).not.toContain(token)
  expect(JSON.stringify([...records.values()])).toContain(fixture.issued[0])
})

it("a connection reusing the token store starts ready, with no login", async () => {
  const second = await connectMcp({
    servers: { secure: { url: fixture.url } },
    tokenStore,
    oauth: { redirectUrl: "http://127.0.0.1:9/oauth/callback" },
  })
  try {
    expect(second.servers()[0]).toMatchObject({ status: "ready", tools: 1 })
    expect(second.tools().map((t) => t.name)).toEqual(["secure__sign_in", "secure__whoami"])
    expect((await second.tools()[1]?.execute({}))?.output).toMatch(/^client client-/)
  } finally {
    await second.close()
  }
})

it("revoked tokens: the next call suspends for a new login, and after it the call runs", async () => {
  const toolkit = await createToolkit({ extraTools: mcp.tools() })
  expect((await toolkit.execute("secure__whoami", {})).isError).toBe(false)
  fixture.revokeAll()
  const suspended = await toolkit.execute("secure__whoami", {})
  const request = suspended.metadata?.pending as Request | undefined
  expect(request).toMatchObject({ kind: "authorization", data: { server: "secure", tool: "whoami" } })
  expect(request?.url).toMatch(/\/authorize\?/)
  await mcp.finishLogin("secure", await fixture.login(request?.url as string))
  const retried = await toolkit.execute(
    "secure__whoami",
    {},
    { answer: { id: request?.id as string, ok: true } },
  )
  expect(retried).toMatchObject({ isError: false, output: expect.stringMatching(/^client client-/) })
  const everything = JSON.stringify({ suspended, retried, servers: mcp.servers(), printed })
  for (const token of fixture.issued) expect(everything).not.toContain(token)
})

it("a client registered beforehand is used instead of dynamic registration", async () => {
  fixture.registerClient("preregistered-app", "http://127.0.0.1:9/oauth/callback")
  const own = new Map<string, unknown>()
  const store: TokenStore = {
    get: async (server) => own.get(server),
    set: async (server, value) => {
      own.set(server, structuredClone(value))
    },
  }
  const third = await connectMcp({
    servers: { secure: { url: fixture.url } },
    tokenStore: store,
    oauth: { redirectUrl: "http://127.0.0.1:9/oauth/callback", clientId: "preregistered-app" },
  })
  try {
    const url = new URL(third.servers()[0]?.authorizationUrl as string)
    expect(url.searchParams.get("client_id")).toBe("preregistered-app")
    await third.finishLogin("secure", await fixture.login(url.href))
    expect((await third.tools()[1]?.execute({}))?.output).toBe("client preregistered-app")
  } finally {
    await third.close()
  }
})
