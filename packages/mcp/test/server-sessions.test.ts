import type { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import type { McpServer } from "@modelcontextprotocol/server"
import { afterEach, describe, expect, it } from "vitest"
import { type McpSessionOptions, createMcpServer } from "../src/server/index.js"
import { type FakeStore, createFakeHost, createFakeStore } from "./server-fake-host.js"
import { type Served, connectClient, serveFetch } from "./server-harness.js"

const KEY = "k".repeat(32)
const WATCHED = "test://watched"

const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

/**
 * A server on a fake host, bearer tokens naming the principal (or, `anonymous`, no
 * `authenticate` at all), with a subscribable resource.
 */
async function serve(store: FakeStore, sessions?: McpSessionOptions, anonymous = false): Promise<Served> {
  const mcp = createMcpServer({
    host: createFakeHost(store),
    agents: ["echo", "deploy"],
    name: "toolnexus-test",
    version: "1.0.0",
    stateKeys: [KEY],
    ...(sessions ? { sessions } : {}),
    ...(anonymous
      ? {}
      : {
          authenticate: (req: Request) =>
            /^Bearer (\w+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ??
            new Response(null, { status: 401 }),
        }),
    configure: watchable,
  })
  const served = await serveFetch(mcp.fetch)
  open.push({ close: () => mcp.close() }, served)
  return served
}

/** `test://watched`, subscribable; tool `touch` changes it (updates go to its subscribers). */
function watchable(server: McpServer): void {
  const subscribed = new Set<string>()
  server.registerResource("watched", WATCHED, { mimeType: "text/plain" }, async () => ({
    contents: [{ uri: WATCHED, text: "watched" }],
  }))
  server.server.registerCapabilities({ resources: { subscribe: true } })
  server.server.setRequestHandler("resources/subscribe", async (request) => {
    subscribed.add(request.params.uri)
    return {}
  })
  server.server.setRequestHandler("resources/unsubscribe", async (request) => {
    subscribed.delete(request.params.uri)
    return {}
  })
  server.registerTool("touch", { description: "Changes test://watched" }, async () => {
    if (subscribed.has(WATCHED)) await server.server.sendResourceUpdated({ uri: WATCHED })
    return { content: [{ type: "text", text: subscribed.has(WATCHED) ? "notified" : "no subscriber" }] }
  })
}

async function legacyClient(
  url: string,
  opts: Parameters<typeof connectClient>[1] = {},
): Promise<{ client: Client; sessionId: string }> {
  const client = await connectClient(url, { era: "legacy", token: "alice", ...opts })
  open.push(client)
  const sessionId = (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId
  expect(sessionId).toMatch(/^[0-9a-f-]{36}$/)
  return { client, sessionId: sessionId as string }
}

/** A raw 2025-11-25 `tools/list` on a session, as `token`. */
function onSession(url: string, sessionId: string, token = "alice"): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
      "mcp-session-id": sessionId,
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }),
  })
}

function initialize(url: string, token = "alice"): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    }),
  })
}

describe("createMcpServer: 2025-11-25 sessions over streamable HTTP", () => {
  it("an approval is pushed as elicitation/create on the session, answered, and the tool runs once", async () => {
    const store = createFakeStore()
    const asked: Record<string, unknown>[] = []
    const { client } = await legacyClient((await serve(store)).url, {
      elicitation: { form: {} },
      onElicit: (params) => {
        asked.push(params)
        return { action: "accept", content: { approved: true } }
      },
    })
    const result = await client.callTool({ name: "deploy", arguments: { prompt: "prod" } })
    expect(result).toMatchObject({ content: [{ text: "deployed prod" }] })
    expect(asked).toEqual([expect.objectContaining({ message: "Deploy prod?" })])
    expect(store.toolRuns.get("deploy")).toBe(1)
  })

  it("resources/subscribe: a change reaches the subscribed session as notifications/resources/updated", async () => {
    const { client } = await legacyClient((await serve(createFakeStore())).url)
    const updated = new Promise<unknown>((resolve) =>
      client.setNotificationHandler("notifications/resources/updated", (n) => resolve(n.params)),
    )
    await client.subscribeResource({ uri: WATCHED })
    expect(await client.callTool({ name: "touch", arguments: {} })).toMatchObject({
      content: [{ text: "notified" }],
    })
    expect(await updated).toMatchObject({ uri: WATCHED })
    await client.unsubscribeResource({ uri: WATCHED })
    expect(await client.callTool({ name: "touch", arguments: {} })).toMatchObject({
      content: [{ text: "no subscriber" }],
    })
  })

  it("a session idle longer than idleMs ends: its id answers 404; a used one stays", async () => {
    let now = 1_000_000
    const served = await serve(createFakeStore(), { idleMs: 60_000, clock: { now: () => now } })
    const { client, sessionId } = await legacyClient(served.url)
    now += 59_000
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("deploy")
    now += 59_000
    expect((await onSession(served.url, sessionId)).status).toBe(200)
    now += 60_001
    const expired = await onSession(served.url, sessionId)
    expect(expired.status).toBe(404)
    expect(await expired.json()).toMatchObject({ error: { code: -32001 } })
  })

  it("a session is its principal's: another principal with its id gets the 404 of an unknown one", async () => {
    const served = await serve(createFakeStore())
    const { client, sessionId } = await legacyClient(served.url)
    const refused = await onSession(served.url, sessionId, "mallory")
    expect(refused.status).toBe(404)
    const unknown = await onSession(served.url, "00000000-0000-4000-8000-000000000000")
    expect(unknown.status).toBe(404)
    expect(await refused.json()).toEqual(await unknown.json())
    // The owner's session is untouched.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0)
  })

  it("DELETE ends the session; sessions are bounded (503 beyond max); 2026-07-28 needs none", async () => {
    const served = await serve(createFakeStore(), { max: 1 })
    const { client, sessionId } = await legacyClient(served.url)
    expect((await initialize(served.url)).status).toBe(503)
    await (client.transport as StreamableHTTPClientTransport).terminateSession()
    expect((await onSession(served.url, sessionId)).status).toBe(404)
    const second = await initialize(served.url)
    expect(second.status).toBe(200)
    expect(second.headers.get("mcp-session-id")).toMatch(/^[0-9a-f-]{36}$/)
    await second.body?.cancel()
    // The modern client is served statelessly even with every session slot taken.
    const modern = await connectClient(served.url, { token: "alice" })
    open.push(modern)
    expect(await modern.callTool({ name: "echo", arguments: { prompt: "hi" } })).toMatchObject({
      content: [{ text: "echo: hi" }],
    })
  })
})

describe("createMcpServer: one principal cannot take every session", () => {
  it("beyond maxPerPrincipal its initialize is 429, others still open; ending one frees its place", async () => {
    const served = await serve(createFakeStore(), { maxPerPrincipal: 2 })
    const first = await legacyClient(served.url)
    await legacyClient(served.url)
    const refused = await initialize(served.url)
    expect(refused.status).toBe(429)
    expect(await refused.json()).toMatchObject({ error: { code: -32000 } })
    const bob = await initialize(served.url, "bob")
    expect(bob.status).toBe(200)
    await bob.body?.cancel()
    await (first.client.transport as StreamableHTTPClientTransport).terminateSession()
    const again = await initialize(served.url)
    expect(again.status).toBe(200)
    await again.body?.cancel()
    expect((await initialize(served.url)).status).toBe(429)
  })

  it("an idle session's expiry frees its place; a refused initialize takes none", async () => {
    let now = 1_000_000
    const served = await serve(createFakeStore(), {
      maxPerPrincipal: 1,
      idleMs: 60_000,
      clock: { now: () => now },
    })
    // Refused by the transport (it accepts no event stream): no session opens.
    const init = await initialize(served.url)
    await init.body?.cancel()
    const bad = await fetch(served.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        authorization: "Bearer bob",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      }),
    })
    expect(bad.status).toBe(406)
    const bob = await initialize(served.url, "bob")
    expect(bob.status).toBe(200)
    await bob.body?.cancel()
    expect((await initialize(served.url)).status).toBe(429)
    now += 60_001
    const after = await initialize(served.url)
    expect(after.status).toBe(200)
    await after.body?.cancel()
  })

  it("without authenticate every caller is one principal: only max bounds it", async () => {
    const served = await serve(createFakeStore(), { max: 3, maxPerPrincipal: 1 }, true)
    for (let i = 0; i < 3; i++) {
      const res = await initialize(served.url)
      expect(res.status).toBe(200)
      await res.body?.cancel()
    }
    expect((await initialize(served.url)).status).toBe(503)
  })

  it("refuses a maxPerPrincipal that is not a positive integer", () => {
    expect(() =>
      createMcpServer({
        host: createFakeHost(createFakeStore()),
        name: "x",
        version: "1",
        stateKeys: [KEY],
        sessions: { maxPerPrincipal: 0 },
      }),
    ).toThrow(/maxPerPrincipal must be a positive integer/)
  })
})

describe("createMcpServer: bodies are read once, before the era is chosen", () => {
  it("a POST not declared JSON ⇒ 415 unread; a body that is not JSON ⇒ the 2025 leg's parse error", async () => {
    const served = await serve(createFakeStore())
    const post = (contentType: string, body: string) =>
      fetch(served.url, {
        method: "POST",
        headers: {
          "content-type": contentType,
          accept: "application/json, text/event-stream",
          authorization: "Bearer alice",
        },
        body,
      })
    expect(
      (await post("text/plain", JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }))).status,
    ).toBe(415)
    const notJson = await post("application/json", "{not json")
    expect(notJson.status).toBe(400)
    expect(await notJson.json()).toMatchObject({ error: { code: -32700 } })
  })
})
