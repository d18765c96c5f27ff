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

/** A server on a fake host, bearer tokens naming the principal, with a subscribable resource. */
async function serve(store: FakeStore, sessions?: McpSessionOptions): Promise<Served> {
  const mcp = createMcpServer({
    host: createFakeHost(store),
    agents: ["echo", "deploy"],
    name: "toolnexus-test",
    version: "1.0.0",
    stateKeys: [KEY],
    ...(sessions ? { sessions } : {}),
    authenticate: (req) =>
      /^Bearer (\w+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ??
      new Response(null, { status: 401 }),
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
