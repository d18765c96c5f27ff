import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Client, createClient, createToolkit, defineTool, hostAgent } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import {
  type DurableStore,
  type StoreHost,
  createMemoryStore,
  createStoreHost,
  openStore,
} from "@toolnexus/durable"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type RelayProxyHostOptions, createRelayProxy } from "../src/app.js"
import { forwardCallerParams } from "../src/caller-params.js"
import { API_KEY, fnTool } from "./helpers.js"

// The proxy over `{ host, agent }` (DESIGN §17): a conversation is a run of the host's agent,
// started with the caller's history and tools (relay tools beside the agent's own toolkit).

let server: FakeLLMServer
let dir: string
beforeAll(async () => {
  server = await createFakeLLMServer()
  dir = mkdtempSync(join(tmpdir(), "relay-host-"))
})
beforeEach(() => server.reset())
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

const KEY_A = "sk-caller-a"
const KEY_B = "sk-caller-b"

/** A store host of one agent, `assistant`, whose own toolkit has `add` (run in the host). */
async function hostOn(store: DurableStore): Promise<{ host: StoreHost; client: Client }> {
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "upstream-model",
    apiKey: API_KEY,
    retries: 0,
    store,
    bodyTransform: forwardCallerParams("openai"),
  })
  const add = defineTool({
    name: "add",
    description: "adds two numbers",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
    run: ({ a, b }) => String(Number(a) + Number(b)),
  })
  const toolkit = await createToolkit({ extraTools: [add] })
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: "assistant", client, toolkit })],
    sweepEveryMs: false,
  })
  return { host, client }
}

function proxyOver(host: StoreHost, store: DurableStore, options: Partial<RelayProxyHostOptions> = {}) {
  return createRelayProxy({
    host,
    agent: "assistant",
    store,
    model: "upstream-model",
    secrets: [API_KEY],
    apiKeys: [KEY_A, KEY_B],
    ...options,
  })
}

/** A chat request as the caller holding `key`. */
async function chatAs(app: ReturnType<typeof proxyOver>, key: string, body: unknown) {
  const res = await app.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, json: (await res.json()) as any }
}

const stores: [string, () => Promise<DurableStore>][] = [
  ["the memory store", async () => createMemoryStore()],
  ["SQLite", async () => openStore(`sqlite:${join(dir, `relay-${Math.random().toString(36).slice(2)}.db`)}`)],
]

describe.each(stores)("createRelayProxy({ host, agent }) over createStoreHost on %s", (_name, open) => {
  let store: DurableStore
  let host: StoreHost
  beforeEach(async () => {
    store = await open()
    host = (await hostOn(store)).host
  })
  afterEach(async () => {
    await host.close()
    await store.close()
  })

  it("runs the agent's own tool in the host, halts on the caller's, and resumes with its result once", async () => {
    server.enqueue(
      { toolCalls: [{ id: "m1", name: "add", arguments: { a: 2, b: 3 } }] },
      { toolCalls: [{ id: "m2", name: "show", arguments: { value: 5 } }] },
      (req) => ({ text: `shown: ${req.toolResults.at(-1)?.content}` }),
    )
    const app = proxyOver(host, store)
    const messages: any[] = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "add 2 and 3, then show it" },
    ]
    const first = await chatAs(app, KEY_A, { messages, tools: [fnTool("show")] })
    expect(first.status).toBe(200)
    expect(first.json.choices[0].finish_reason).toBe("tool_calls")
    const call = first.json.choices[0].message.tool_calls[0]
    expect(call.function.name).toBe("show")
    // The model saw both: the agent's toolkit and the caller's relay tool.
    expect(server.requests[0]?.toolNames?.sort()).toEqual(["add", "show"])
    expect(server.requests[0]?.system).toBe("Be brief.")
    const conversation = first.headers.get("x-relay-conversation")!
    expect((await host.listPending()).map((e) => e.conversationId)).toEqual([conversation])

    const follow = {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: call.id, content: "OK" },
      ],
    }
    const second = await chatAs(app, KEY_A, follow)
    expect(second.status).toBe(200)
    expect(second.json.choices[0].message.content).toBe("shown: OK")
    // A redelivery (a retry whose response was lost) gets the same turn, without a model call.
    const again = await chatAs(app, KEY_A, follow)
    expect(again.json.choices[0].message.content).toBe("shown: OK")
    expect(server.requests).toHaveLength(3)
    expect(await host.listPending()).toEqual([])
    expect((await host.transcript(conversation))?.at(-1)).toMatchObject({ role: "assistant" })
  })

  it("binds the caller's tool-call ids to its key: another caller's results resume nothing (§20)", async () => {
    server.enqueue({ toolCalls: [{ id: "m1", name: "show", arguments: {} }] }, { text: "done" })
    const app = proxyOver(host, store)
    const messages: any[] = [{ role: "user", content: "show" }]
    const first = await chatAs(app, KEY_A, { messages, tools: [fnTool("show")] })
    const call = first.json.choices[0].message.tool_calls[0]
    const follow = {
      messages: [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: call.id, content: "B's" },
      ],
    }
    const stolen = await chatAs(app, KEY_B, follow)
    expect(stolen.status).toBe(409)
    // Nothing tells B that the id exists, nor what A's conversation holds.
    expect(JSON.stringify(stolen.json)).not.toContain(first.headers.get("x-relay-conversation")!)
    expect(stolen.json.error.message).toMatch(/no pending tool call/)
    expect(server.requests).toHaveLength(1)
    expect(await host.listPending()).toHaveLength(1)
    const own = await chatAs(app, KEY_A, {
      messages: follow.messages.with(-1, { ...follow.messages.at(-1), content: "A's" }),
    })
    expect(own.status).toBe(200)
    expect(server.requests[1]?.toolResults[0]).toMatchObject({ id: "m1", content: "A's" })
  })

  it("binds Responses ids to the caller: another key's previous_response_id is unknown, the owner's continues", async () => {
    server.enqueue({ text: "private answer" }, { text: "ok" })
    const app = proxyOver(host, store)
    const post = async (key: string, body: unknown) => {
      const res = await app.request("/v1/responses", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      })
      return { status: res.status, json: (await res.json()) as any }
    }
    const first = await post(KEY_A, { model: "m", input: "tell me" })
    expect(first.status).toBe(200)
    const follow = { model: "m", previous_response_id: first.json.id, input: "more" }
    const stolen = await post(KEY_B, follow)
    expect(stolen.status).toBeGreaterThanOrEqual(400)
    expect(stolen.status).toBeLessThan(500)
    expect(JSON.stringify(stolen.json)).not.toContain("private answer")
    expect(server.requests).toHaveLength(1)
    const own = await post(KEY_A, follow)
    expect(own.status).toBe(200)
    expect(JSON.stringify(server.requests[1]?.body)).toContain("private answer")
  })

  it("leaks no credential: an upstream error echoing the key is scrubbed, the stored records never hold it", async () => {
    server.enqueue({ status: 401, text: `invalid key ${API_KEY}` })
    const app = proxyOver(host, store)
    const res = await chatAs(app, KEY_A, {
      messages: [{ role: "user", content: "hi" }],
      tools: [fnTool("show")],
    })
    expect(res.status).toBe(401)
    expect(JSON.stringify(res.json)).not.toContain(API_KEY)
    server.enqueue({ toolCalls: [{ id: "m1", name: "show", arguments: {} }] })
    const halted = await chatAs(app, KEY_A, {
      messages: [{ role: "user", content: "go" }],
      tools: [fnTool("show")],
    })
    const conversation = halted.headers.get("x-relay-conversation")!
    const stored = JSON.stringify([
      await store.get(conversation),
      await store.getSnapshot(`relay-proxy/conversation/${conversation}`),
      await host.listPending(),
    ])
    for (const secret of [API_KEY, KEY_A, KEY_B]) expect(stored).not.toContain(secret)
  })

  it("an answer after expiry is a 410 naming the request, also once a sweep declined it (one contract)", async () => {
    server.enqueue(
      { toolCalls: [{ id: "m1", name: "show", arguments: {} }] },
      { toolCalls: [{ id: "m2", name: "show", arguments: {} }] },
      { text: "declined, so: nothing shown" },
      { text: "declined, so: nothing shown" },
    )
    const app = proxyOver(host, store, { pendingTtlMs: 1, now: () => Date.now() - 60_000 })
    const messages: any[] = [{ role: "user", content: "show" }]
    const ask = async () => {
      const first = await chatAs(app, KEY_A, { messages, tools: [fnTool("show")] })
      const call = first.json.choices[0].message.tool_calls[0]
      return [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: call.id, content: "late" },
      ]
    }
    const late = await chatAs(app, KEY_A, { messages: await ask() })
    expect(late.status).toBe(410)
    expect(late.json.error).toMatchObject({ code: "answer_expired", requestId: expect.any(String) })
    expect(Date.parse(late.json.error.expiresAt)).toBeLessThan(Date.now())

    const follow = await ask()
    // The host's sweep declines the expired request (the run goes on without the results).
    const report = await host.sweep()
    expect(report.failed).toEqual([])
    expect(report.completed).toHaveLength(2)
    const swept = await chatAs(app, KEY_A, { messages: follow })
    expect(swept.status).toBe(410)
    expect(swept.json.error).toMatchObject({ code: "answer_expired", requestId: expect.any(String) })
  })
})

describe("createRelayProxy({ host, agent }) across a restart", () => {
  it("a new host and proxy on the same SQLite file resume what the first one halted", async () => {
    const url = `sqlite:${join(dir, "restart.db")}`
    server.enqueue({ toolCalls: [{ id: "m1", name: "show", arguments: {} }] }, (req) => ({
      text: `shown ${req.toolResults[0]?.content}`,
    }))
    const messages: any[] = [{ role: "user", content: "show" }]
    const storeA = await openStore(url)
    const a = await hostOn(storeA)
    const first = await chatAs(proxyOver(a.host, storeA), KEY_A, { messages, tools: [fnTool("show")] })
    const call = first.json.choices[0].message.tool_calls[0]
    await a.host.close()
    await storeA.close() // as if the process had exited

    const storeB = await openStore(url)
    const b = await hostOn(storeB)
    try {
      const follow = [
        ...messages,
        first.json.choices[0].message,
        { role: "tool", tool_call_id: call.id, content: "X" },
      ]
      const second = await chatAs(proxyOver(b.host, storeB), KEY_A, { messages: follow })
      expect(second.status).toBe(200)
      expect(second.json.choices[0].message.content).toBe("shown X")
      expect(server.requests).toHaveLength(2)
    } finally {
      await b.host.close()
      await storeB.close()
    }
  })

  it("refuses the two forms together, and a host without an agent", () => {
    const store = createMemoryStore()
    const host = createStoreHost({ store, agents: [], sweepEveryMs: false })
    const client = { conversationStore: () => store } as unknown as Client
    expect(() => createRelayProxy({ host, agent: "a", client } as never)).toThrow(/not both/)
    expect(() => createRelayProxy({ host } as never)).toThrow(/`agent`/)
  })
})
