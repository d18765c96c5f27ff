import type { Client } from "@modelcontextprotocol/client"
import { afterEach, describe, expect, it } from "vitest"
import { inputRequired } from "@modelcontextprotocol/server"
import { type McpServerOptions, createMcpServer } from "../src/server/index.js"
import { type FakeStore, createFakeHost, createFakeStore } from "./server-fake-host.js"
import { type Served, connectClient, serveFetch } from "./server-harness.js"

const KEY = "k".repeat(32)
const OLD_KEY = "o".repeat(32)
const AGENTS = ["echo", "deploy", "survey", "login", "pair"]
const FORM = { form: {} }

type InputRequired = {
  resultType: "input_required"
  inputRequests: Record<string, { method: string; params: Record<string, unknown> }>
  requestState: string
}

const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

/** A server over a host on `store`, served on 127.0.0.1; bearer tokens name the principal. */
async function serve(
  store: FakeStore,
  opts: {
    stateKeys?: string[]
    stateTtlMs?: number
    allowedHosts?: string[]
    engine?: boolean
    configure?: Parameters<typeof createMcpServer>[0]["configure"]
  } = {},
): Promise<Served> {
  const mcp = createMcpServer({
    host: createFakeHost(store, { engine: opts.engine ?? false }),
    agents: AGENTS,
    name: "toolnexus-test",
    version: "1.0.0",
    stateKeys: opts.stateKeys ?? [KEY],
    ...(opts.stateTtlMs ? { stateTtlMs: opts.stateTtlMs } : {}),
    ...(opts.allowedHosts ? { allowedHosts: opts.allowedHosts } : {}),
    ...(opts.configure ? { configure: opts.configure } : {}),
    authenticate: (req) => {
      const token = /^Bearer (\w+)$/.exec(req.headers.get("authorization") ?? "")?.[1]
      return token ?? new Response(null, { status: 401, headers: { "www-authenticate": "Bearer" } })
    },
  })
  const served = await serveFetch(mcp.fetch)
  open.push({ close: () => mcp.close() }, served)
  return served
}

/** An in-process MCP server of the `echo` agent over a fake host (with `extra` options), closed after the test. */
function echoServer(extra: Partial<McpServerOptions> = {}) {
  const mcp = createMcpServer({
    host: createFakeHost(createFakeStore()),
    agents: ["echo"],
    name: "t",
    version: "1",
    stateKeys: [KEY],
    ...extra,
  })
  open.push({ close: () => mcp.close() })
  return mcp
}

async function client(url: string, opts: Parameters<typeof connectClient>[1] = {}): Promise<Client> {
  const c = await connectClient(url, { token: "alice", elicitation: FORM, ...opts })
  open.push(c)
  return c
}

async function ask(c: Client, tool: string, prompt: string): Promise<InputRequired> {
  const result = await c.callTool({ name: tool, arguments: { prompt } }, { allowInputRequired: true })
  expect(result).toMatchObject({ resultType: "input_required" })
  return result as unknown as InputRequired
}

function retry(c: Client, tool: string, state: string, inputResponses: Record<string, unknown>) {
  return c.callTool(
    { name: tool, arguments: { prompt: "again" }, inputResponses, requestState: state } as never,
    { allowInputRequired: true },
  )
}

const approve = (approved: boolean, reason?: string) => ({
  action: "accept",
  content: reason === undefined ? { approved } : { approved, reason },
})

describe("createMcpServer over streamable HTTP (2026-07-28)", () => {
  it("lists each hosted agent as a tool taking {prompt}, and runs one to its result", async () => {
    const served = await serve(createFakeStore())
    const c = await client(served.url)
    const { tools } = await c.listTools()
    expect(tools.map((t) => t.name)).toEqual(AGENTS)
    expect(tools[0]?.inputSchema).toMatchObject({ type: "object", required: ["prompt"] })
    const result = await c.callTool({ name: "echo", arguments: { prompt: "hi" } })
    expect(result).toMatchObject({ content: [{ type: "text", text: "echo: hi" }], isError: false })
  })

  it("an approval ⇒ input_required with a form and a sealed state; the retry approves, the tool runs once", async () => {
    const store = createFakeStore()
    const served = await serve(store)
    const c = await client(served.url)
    const first = await ask(c, "deploy", "prod")
    const [id, request] = Object.entries(first.inputRequests)[0] ?? []
    expect(id).toMatch(/^mcp-[0-9a-f-]+\.approve$/)
    expect(request).toMatchObject({
      method: "elicitation/create",
      params: {
        message: "Deploy prod?",
        requestedSchema: {
          type: "object",
          properties: { approved: { type: "boolean" } },
          required: ["approved"],
        },
      },
    })
    // The state names the run, never its transcript: the prompt is nowhere in it.
    expect(first.requestState).toMatch(/^tnx1\./)
    expect(Buffer.from(first.requestState.slice(5), "base64url").toString("latin1")).not.toContain("prod")
    const done = await retry(c, "deploy", first.requestState, { [id as string]: approve(true) })
    expect(done).toMatchObject({ content: [{ type: "text", text: "deployed prod" }], isError: false })
    expect(store.toolRuns.get("deploy")).toBe(1)
  })

  it("a declined approval is delivered with its reason and the tool does not run", async () => {
    const store = createFakeStore()
    const c = await client((await serve(store)).url)
    const first = await ask(c, "deploy", "prod")
    const id = Object.keys(first.inputRequests)[0] as string
    const done = await retry(c, "deploy", first.requestState, { [id]: approve(false, "not today") })
    expect(done).toMatchObject({ content: [{ text: "not deployed (not today)" }] })
    expect(store.delivered).toEqual([{ id, ok: false, reason: "not today" }])
    expect(store.toolRuns.get("deploy")).toBeUndefined()
  })

  it("the SDK client's own auto-fulfilment answers the form inside one callTool", async () => {
    const store = createFakeStore()
    const served = await serve(store)
    const asked: Record<string, unknown>[] = []
    const c = await client(served.url, {
      onElicit: (params) => {
        asked.push(params)
        return { action: "accept", content: { approved: true } }
      },
    })
    const result = await c.callTool({ name: "deploy", arguments: { prompt: "staging" } })
    expect(result).toMatchObject({ content: [{ text: "deployed staging" }] })
    expect(asked).toHaveLength(1)
    expect(store.toolRuns.get("deploy")).toBe(1)
  })

  it("an input request carries its schema; a URL-mode one its url; two open requests are two input requests", async () => {
    const store = createFakeStore()
    const c = await client((await serve(store)).url, { elicitation: { form: {}, url: {} } })
    const survey = await ask(c, "survey", "x")
    const [inputId, input] = Object.entries(survey.inputRequests)[0] ?? []
    expect(input?.params).toMatchObject({
      message: "Which city?",
      requestedSchema: { properties: { city: {} } },
    })
    const city = await retry(c, "survey", survey.requestState, {
      [inputId as string]: { action: "accept", content: { city: "Oslo" } },
    })
    expect(city).toMatchObject({ content: [{ text: "city: Oslo" }] })

    const login = await ask(c, "login", "x")
    expect(Object.values(login.inputRequests)[0]?.params).toMatchObject({
      mode: "url",
      url: "https://login.example/authorize",
    })

    const pair = await ask(c, "pair", "x")
    const ids = Object.keys(pair.inputRequests)
    expect(ids).toHaveLength(2)
    // Answering one of two: the next state asks for the other one only.
    const next = (await retry(c, "pair", pair.requestState, {
      [ids[0] as string]: approve(true),
    })) as unknown as InputRequired
    expect(Object.keys(next.inputRequests)).toEqual([ids[1]])
    const done = await retry(c, "pair", next.requestState, { [ids[1] as string]: approve(false) })
    expect(done).toMatchObject({ content: [{ text: `${ids[0]}=true ${ids[1]}=false` }] })
  })

  it("a retry whose answer was already delivered (a lost response) gets the current state, never a second decision", async () => {
    const store = createFakeStore()
    const c = await client((await serve(store)).url)
    const first = await ask(c, "deploy", "prod")
    const id = Object.keys(first.inputRequests)[0] as string
    await retry(c, "deploy", first.requestState, { [id]: approve(true) })
    // The same retry again, and one that now says no: both get the result of the first decision.
    const again = await retry(c, "deploy", first.requestState, { [id]: approve(true) })
    const flipped = await retry(c, "deploy", first.requestState, { [id]: approve(false, "changed my mind") })
    expect(again).toMatchObject({ content: [{ text: "deployed prod" }] })
    expect(flipped).toMatchObject({ content: [{ text: "deployed prod" }] })
    expect(store.delivered).toEqual([{ id, ok: true }])
    expect(store.toolRuns.get("deploy")).toBe(1)
  })

  it("two server instances over one store answer each other's state; a rotated-in key still opens the old state", async () => {
    const store = createFakeStore()
    const a = await serve(store, { stateKeys: [OLD_KEY] })
    const b = await serve(store, { stateKeys: [KEY, OLD_KEY] })
    const first = await ask(await client(a.url), "deploy", "prod")
    const id = Object.keys(first.inputRequests)[0] as string
    const done = await retry(await client(b.url), "deploy", first.requestState, { [id]: approve(true) })
    expect(done).toMatchObject({ content: [{ text: "deployed prod" }] })
    expect(store.toolRuns.get("deploy")).toBe(1)
  })
})

describe("refused states: a JSON-RPC error, and nothing delivered", () => {
  async function parked(store: FakeStore, opts: Parameters<typeof serve>[1] = {}) {
    const served = await serve(store, opts)
    const c = await client(served.url)
    const first = await ask(c, "deploy", "prod")
    return { served, c, first, id: Object.keys(first.inputRequests)[0] as string }
  }

  async function expectRefused(call: Promise<unknown>, store: FakeStore) {
    await expect(call).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/requestState/) })
    expect(store.delivered).toEqual([])
    expect(store.toolRuns.get("deploy")).toBeUndefined()
  }

  it("tampered: one flipped character of the sealed state", async () => {
    const store = createFakeStore()
    const { c, first, id } = await parked(store)
    const at = first.requestState.length - 10
    const flipped = first.requestState[at] === "A" ? "B" : "A"
    const tampered = first.requestState.slice(0, at) + flipped + first.requestState.slice(at + 1)
    await expectRefused(retry(c, "deploy", tampered, { [id]: approve(true) }), store)
    await expectRefused(retry(c, "deploy", "not-a-state", { [id]: approve(true) }), store)
  })

  it("sealed for another principal", async () => {
    const store = createFakeStore()
    const { served, first, id } = await parked(store)
    const mallory = await client(served.url, { token: "mallory" })
    await expectRefused(retry(mallory, "deploy", first.requestState, { [id]: approve(true) }), store)
  })

  it("sealed by no current key (rotated out)", async () => {
    const store = createFakeStore()
    const { first, id } = await parked(store, { stateKeys: [OLD_KEY] })
    const rotated = await client((await serve(store, { stateKeys: [KEY] })).url)
    await expectRefused(retry(rotated, "deploy", first.requestState, { [id]: approve(true) }), store)
  })

  it("expired", async () => {
    const store = createFakeStore()
    const { c, first, id } = await parked(store, { stateTtlMs: 1 })
    // Wait for the clock to pass the state's expiry (a condition, not a fixed sleep).
    const sealedAt = Date.now()
    while (Date.now() <= sealedAt + 1) await new Promise((resolve) => setImmediate(resolve))
    await expectRefused(retry(c, "deploy", first.requestState, { [id]: approve(true) }), store)
  })

  it("echoed to another tool of the same server: an isError result, nothing delivered", async () => {
    const store = createFakeStore()
    const { c, first, id } = await parked(store)
    const result = await retry(c, "survey", first.requestState, { [id]: approve(true) })
    expect(result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/not for survey/) }],
    })
    expect(store.delivered).toEqual([])
  })
})

describe("a tool registered through configure with its own requestState", () => {
  const seen: unknown[] = []
  const configure = (
    server: Parameters<NonNullable<Parameters<typeof createMcpServer>[0]["configure"]>>[0],
  ) => {
    server.registerTool("confirm", { description: "Asks, with its own state" }, async (ctx) => {
      seen.push(ctx.mcpReq.requestState())
      if (ctx.mcpReq.inputResponses?.ok) return { content: [{ type: "text", text: "confirmed" }] }
      return inputRequired({
        inputRequests: {
          ok: inputRequired.elicit({
            message: "Sure?",
            requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } },
          }),
        },
        requestState: "my-own-state",
      })
    })
  }

  it("gets it sealed (never on the wire as it was) and back as it returned it; tampered or another principal's is refused before it runs", async () => {
    seen.length = 0
    const served = await serve(createFakeStore(), { configure })
    const c = await client(served.url)
    const first = (await c.callTool(
      { name: "confirm", arguments: {} },
      { allowInputRequired: true },
    )) as unknown as InputRequired
    expect(first.requestState).toMatch(/^tnx1\./)
    expect(first.requestState).not.toContain("my-own-state")
    const answer = { ok: { action: "accept", content: { ok: true } } }
    const retry = (on: Client, state: string) =>
      on.callTool({ name: "confirm", arguments: {}, inputResponses: answer, requestState: state } as never, {
        allowInputRequired: true,
      })
    const at = first.requestState.length - 8
    const tampered = `${first.requestState.slice(0, at)}${first.requestState[at] === "A" ? "B" : "A"}${first.requestState.slice(at + 1)}`
    await expect(retry(c, tampered)).rejects.toMatchObject({ code: -32602 })
    await expect(
      retry(await client(served.url, { token: "mallory" }), first.requestState),
    ).rejects.toMatchObject({
      code: -32602,
    })
    await expect(retry(c, "my-own-state")).rejects.toMatchObject({ code: -32602 })
    expect(seen).toEqual([undefined])
    expect(await retry(c, first.requestState)).toMatchObject({ content: [{ text: "confirmed" }] })
    expect(seen).toEqual([undefined, "my-own-state"])
  })

  it("an agent's state echoed to it, or its state echoed to an agent, delivers nothing", async () => {
    const store = createFakeStore()
    const served = await serve(store, { configure })
    const c = await client(served.url)
    const mine = (await c.callTool(
      { name: "confirm", arguments: {} },
      { allowInputRequired: true },
    )) as unknown as InputRequired
    const result = await retry(c, "deploy", mine.requestState, { ok: approve(true) })
    expect(result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/not for deploy/) }],
    })
    expect(store.delivered).toEqual([])
  })
})

describe("clients, hosts and principals", () => {
  it("a client without elicitation gets an isError result naming the open request", async () => {
    const store = createFakeStore()
    const c = await client((await serve(store)).url, { elicitation: undefined })
    const result = await c.callTool({ name: "deploy", arguments: { prompt: "prod" } })
    expect(result.isError).toBe(true)
    const text = (result.content as { text: string }[])[0]?.text
    expect(text).toMatch(/mcp-[0-9a-f-]+\.approve \(approval: Deploy prod\?\)/)
    expect(text).toMatch(/another door/)
    // The request stays open for another door.
    expect([...store.runs.values()][0]?.open).toHaveLength(1)
  })

  it("a form-only client asked for a URL-mode authorization gets isError naming it", async () => {
    const c = await client((await serve(createFakeStore())).url, { elicitation: { form: {} } })
    const result = await c.callTool({ name: "login", arguments: { prompt: "x" } })
    expect(result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/\.login \(authorization/) }],
    })
  })

  it("run events become progress notifications when the call carries a progress token", async () => {
    const c = await client((await serve(createFakeStore())).url)
    const progress: unknown[] = []
    const result = await c.callTool(
      { name: "echo", arguments: { prompt: "p" } },
      { onprogress: (p) => progress.push(p) },
    )
    expect(result).toMatchObject({ content: [{ text: "echo: p" }] })
    expect(progress).toEqual([expect.objectContaining({ progress: 1, message: "calling echo" })])
  })

  it("on an engine-like host (result settles at the end only, onEvent refused) a parked run is still found", async () => {
    const store = createFakeStore()
    const c = await client((await serve(store, { engine: true })).url)
    const first = (await c.callTool(
      { name: "deploy", arguments: { prompt: "prod" } },
      { allowInputRequired: true, onprogress: () => {} },
    )) as unknown as InputRequired
    const id = Object.keys(first.inputRequests)[0] as string
    const done = await c.callTool(
      {
        name: "deploy",
        arguments: { prompt: "prod" },
        inputResponses: { [id]: approve(true) },
        requestState: first.requestState,
      } as never,
      { allowInputRequired: true, onprogress: () => {} },
    )
    expect(done).toMatchObject({ content: [{ text: "deployed prod" }] })
    expect(store.toolRuns.get("deploy")).toBe(1)
  })

  it("a 2025-11-25 client is served through initialize: tools listed, an agent run", async () => {
    const c = await client((await serve(createFakeStore())).url, { era: "legacy" })
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(AGENTS)
    expect(await c.callTool({ name: "echo", arguments: { prompt: "old" } })).toMatchObject({
      content: [{ text: "echo: old" }],
    })
  })

  it("authenticate's Response answers an unauthenticated request", async () => {
    const served = await serve(createFakeStore())
    const res = await fetch(served.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    })
    expect(res.status).toBe(401)
  })

  it("refuses bad options eagerly: short keys, an agent listed twice, a configure'd tool named like an agent", () => {
    const host = createFakeHost(createFakeStore())
    const base = { host, agents: ["echo"], name: "t", version: "1", stateKeys: [KEY] }
    expect(() => createMcpServer({ ...base, stateKeys: ["short"] })).toThrow(/stateKeys\[0\]/)
    expect(() => createMcpServer({ ...base, agents: ["echo", "echo"] })).toThrow(/twice/)
    expect(() =>
      createMcpServer({
        ...base,
        configure: (server) => {
          server.registerTool("echo", { description: "clash" }, async () => ({ content: [] }))
        },
      }),
    ).toThrow(/configure failed/)
  })

  it("a host failure reaches the client as a code, never its message or stack", async () => {
    const host = createFakeHost(createFakeStore())
    const mcp = createMcpServer({
      host: {
        ...host,
        result: async () => {
          throw new Error("connect postgres://admin:hunter2@db failed")
        },
      },
      agents: ["echo"],
      name: "t",
      version: "1",
      stateKeys: [KEY],
    })
    open.push({ close: () => mcp.close() })
    const served = await serveFetch(mcp.fetch)
    open.push(served)
    const c = await client(served.url)
    const result = await c.callTool({ name: "echo", arguments: { prompt: "x" } })
    expect(result).toMatchObject({ isError: true, content: [{ text: "the run failed (internal error)" }] })
    expect(JSON.stringify(result)).not.toMatch(/hunter2|at .*\.ts/)
  })

  it("an authenticate hook that throws ⇒ 500 without its message", async () => {
    const mcp = echoServer({
      authenticate: () => {
        throw new Error("token sk-secret-123 rejected")
      },
    })
    const res = await mcp.fetch(
      new Request("http://127.0.0.1/mcp", { method: "POST", headers: { host: "127.0.0.1" }, body: "{}" }),
    )
    expect(res.status).toBe(500)
    expect(await res.text()).not.toMatch(/sk-secret/)
  })

  it("DNS rebinding: a Host or Origin not allowed ⇒ 403, a malformed Host ⇒ 400; bodies are bounded", async () => {
    const served = await serve(createFakeStore())
    const post = (
      headers: Record<string, string>,
      body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    ) => createMcpServerFetch(served, headers, body)
    expect((await post({ host: "evil.example" })).status).toBe(403)
    expect((await post({ origin: "http://evil.example" })).status).toBe(403)
    expect((await post({ host: "bad host" })).status).toBe(400)
    expect((await post({}, "x".repeat(1024 * 1024 + 1))).status).toBe(413)
    expect((await post({ origin: "http://localhost:3000" })).status).toBe(200)
  })

  it("a body streamed in chunks (a character split between two, a BOM first) is read whole; past the bound ⇒ 413", async () => {
    const mcp = echoServer()
    const streamed = (parts: Uint8Array[]) =>
      mcp.fetch(
        new Request("http://127.0.0.1/mcp", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/list",
          },
          body: new ReadableStream({
            start(controller) {
              for (const part of parts) controller.enqueue(part)
              controller.close()
            },
          }),
          duplex: "half",
        } as RequestInit),
      )
    const bytes = Buffer.from(
      JSON.stringify({
        jsonrpc: "2.0",
        id: "é-1",
        method: "tools/list",
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { name: "t", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }),
    )
    const split = bytes.indexOf(0xc3) + 1
    for (const parts of [
      [bytes.subarray(0, split), bytes.subarray(split)],
      [Buffer.from([0xef, 0xbb, 0xbf]), bytes],
    ]) {
      const res = await streamed(parts)
      const text = await res.text()
      const json = text.startsWith("{") ? text : /^data: (.*)$/m.exec(text)?.[1]
      expect(JSON.parse(json ?? "{}")).toMatchObject({ id: "é-1", result: { tools: [{ name: "echo" }] } })
    }
    const big = new Uint8Array(512 * 1024)
    expect((await streamed([big, big, new Uint8Array(1)])).status).toBe(413)
  })

  it("DNS rebinding in process: the URL's host stands for a missing Host, and each verdict repeats", async () => {
    const mcp = echoServer()
    const status = async (url: string, headers: Record<string, string> = {}) =>
      (
        await mcp.fetch(
          new Request(url, {
            method: "POST",
            headers: { "content-type": "application/json", ...headers },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
          }),
        )
      ).status
    // Each twice: the second answer comes from the kept verdict and must be the first's.
    for (let i = 0; i < 2; i++) {
      expect(await status("http://evil.example/mcp")).toBe(403)
      expect(await status("http://evil.example:8080?x=1")).toBe(403)
      expect(await status("http://127.0.0.1:3000/mcp", { origin: "http://evil.example" })).toBe(403)
      expect(await status("http://127.0.0.1:3000/mcp", { host: "evil.example" })).toBe(403)
      expect(await status("http://[::1]:3000/mcp")).not.toBe(403)
      expect(await status("http://localhost/mcp", { origin: "http://localhost:3000" })).not.toBe(403)
    }
  })
})

/** A raw POST through node:http, with headers fetch would not let us set (Host). */
async function createMcpServerFetch(served: Served, headers: Record<string, string>, body: string) {
  const { request } = await import("node:http")
  const url = new URL(served.url)
  return new Promise<{ status: number }>((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: "Bearer alice",
          ...headers,
        },
      },
      (res) => {
        res.resume()
        resolve({ status: res.statusCode ?? 0 })
      },
    )
    req.on("error", reject)
    req.end(body)
  })
}
