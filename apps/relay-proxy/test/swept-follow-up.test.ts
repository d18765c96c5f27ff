import { createClient, hostAgent } from "@toolnexus/core"
import { type FakeLLMServer, type FakeReply, createFakeLLMServer } from "@toolnexus/core/testing"
import {
  type DurableStore,
  type StoreHost,
  createMemoryStore,
  createStoreHost,
  openStore,
} from "@toolnexus/durable"
import type OpenAI from "openai"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { createRelayProxy } from "../src/app.js"
import { OpenAIClient, fnTool } from "./helpers.js"

// A follow-up whose proxy process dies mid-model (after its results were claimed) is finished by
// another host's sweep. The caller, whose connection dropped, sends the same follow-up again, as
// any OpenAI client does: it gets what the run did with those results (the new halt's tool calls,
// or the final answer), as if the first follow-up had answered, with no model call repeated.

let server: FakeLLMServer
let store: DurableStore
const hosts: StoreHost[] = []
beforeAll(async () => {
  server = await createFakeLLMServer()
})
beforeEach(async () => {
  server.reset()
  store = await openStore("sqlite::memory:")
})
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.close()
  await store.close()
})
afterAll(() => server.close())

/** One proxy process: its own store host and proxy, on the shared store (or `index` for the proxy's records). */
function proxyProcess(index: DurableStore = store) {
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "upstream-model",
    apiKey: "k",
    retries: 0,
    store,
  })
  const host = createStoreHost({
    store,
    agents: [hostAgent({ name: "assistant", client })],
    sweepEveryMs: false,
  })
  hosts.push(host)
  const app = createRelayProxy({ host, agent: "assistant", store: index, model: "upstream-model" })
  // The official SDK, its requests served by this process's app in-process.
  const openai = new OpenAIClient({
    baseURL: "http://proxy.test/v1",
    apiKey: "caller",
    maxRetries: 0,
    fetch: ((url: string, init?: RequestInit) => app.request(url, init)) as typeof fetch,
  })
  return { host, app, openai }
}

/** What a caller reads of one answer, whichever endpoint gave it. */
interface Turn {
  text: string
  calls: { id: string; name: string }[]
  /** The request body that answers every call with `output` (after a halt). */
  followUp: (output: string) => Record<string, unknown>
}

/** One way of talking to the proxy: an endpoint, streamed or not. */
interface Door {
  name: string
  path: string
  /** The first request of a conversation. */
  first: Record<string, unknown>
  send(openai: OpenAI, body: Record<string, unknown>): Promise<Turn>
}

const tools = [fnTool("t")]
const responsesTools = [
  {
    type: "function",
    name: "t",
    description: "t on the caller's side",
    parameters: { type: "object", properties: {} },
  },
]

function chatDoor(stream: boolean): Door {
  return {
    name: `chat completions, ${stream ? "streamed" : "not streamed"}`,
    path: "/v1/chat/completions",
    first: { model: "m", messages: [{ role: "user", content: "go" }], tools, stream },
    async send(openai, body) {
      const message = stream
        ? (await openai.chat.completions.stream(body as never).finalChatCompletion()).choices[0]!.message
        : (
            (await openai.chat.completions.create({
              ...body,
              stream: false,
            } as never)) as OpenAI.ChatCompletion
          ).choices[0]!.message
      const calls = (message.tool_calls ?? []).map((c) => {
        const call = c as OpenAI.ChatCompletionMessageFunctionToolCall
        return { id: call.id, name: call.function.name }
      })
      const assistant = {
        role: "assistant",
        content: message.content ?? null,
        ...(calls.length ? { tool_calls: message.tool_calls } : {}),
      }
      return {
        text: message.content ?? "",
        calls,
        followUp: (output) => ({
          ...body,
          messages: [
            ...(body.messages as unknown[]),
            assistant,
            ...calls.map((c) => ({ role: "tool", tool_call_id: c.id, content: output })),
          ],
        }),
      }
    },
  }
}

function responsesDoor(stream: boolean): Door {
  return {
    name: `Responses API, ${stream ? "streamed" : "not streamed"}`,
    path: "/v1/responses",
    first: { model: "m", input: [{ role: "user", content: "go" }], tools: responsesTools, stream },
    async send(openai, body) {
      const response = stream
        ? await openai.responses.stream(body as never).finalResponse()
        : ((await openai.responses.create({ ...body, stream: false } as never)) as OpenAI.Responses.Response)
      const calls = response.output
        .filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === "function_call")
        .map((item) => ({ id: item.call_id, name: item.name }))
      return {
        text: response.output_text,
        calls,
        followUp: (output) => ({
          ...body,
          input: [
            ...(body.input as unknown[]),
            ...response.output,
            ...calls.map((c) => ({ type: "function_call_output", call_id: c.id, output })),
          ],
        }),
      }
    },
  }
}

const doors = [chatDoor(false), chatDoor(true), responsesDoor(false), responsesDoor(true)]

/**
 * Halts a conversation on `a`, then sends its follow-up (results `R`) to `a` and kills `a` while
 * the model answers it: the request is aborted, and `a`'s host closed, with the results claimed.
 * `b`'s sweep then finishes the run with `afterResults` as the model's reply.
 */
async function sweptFollowUp(door: Door, afterResults: FakeReply) {
  let modelAsked!: () => void
  const asked = new Promise<void>((resolve) => {
    modelAsked = resolve
  })
  server.enqueue({ toolCalls: [{ id: "u1", name: "t", arguments: {} }] }, () => {
    modelAsked()
    return { hang: true }
  })
  const a = proxyProcess()
  const halted = await door.send(a.openai, door.first)
  expect(halted.calls.map((c) => c.name)).toEqual(["t"])
  const follow = halted.followUp("R")

  const dropped = new AbortController()
  const lost = Promise.resolve(
    a.app.request(door.path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(follow),
      signal: dropped.signal,
    }),
  ).then((res) => res.text())
  await asked
  dropped.abort()
  await lost
  await a.host.close()
  expect(server.requests).toHaveLength(2)

  server.enqueue(afterResults)
  const b = proxyProcess()
  const swept = await b.host.sweep()
  expect(swept.completed).toHaveLength(1)
  expect(server.requests).toHaveLength(3)
  // The sweep resumed with the caller's results and tools.
  expect(server.requests[2]?.toolResults).toEqual([{ id: "u1", content: "R", isError: false }])
  expect(server.requests[2]?.toolNames).toEqual(["t"])
  return { b, halted, follow }
}

const stores: [string, () => Promise<DurableStore>][] = [
  ["SQLite", () => openStore("sqlite::memory:")],
  ["the memory store", async () => createMemoryStore()],
]

describe.each(stores)("on %s", (_name, open) => {
  beforeEach(async () => {
    await store.close()
    store = await open()
  })

  describe.each(doors)("a follow-up retried after another host's sweep finished it ($name)", (door) => {
    it("the retry gets the new halt's tool calls, and the caller's next follow-up continues the run", async () => {
      const { b, halted, follow } = await sweptFollowUp(door, {
        toolCalls: [{ id: "u2", name: "t", arguments: {} }],
      })

      const retried = await door.send(b.openai, follow)
      expect(retried.calls.map((c) => c.name)).toEqual(["t"])
      expect(retried.calls[0]?.id).toMatch(/^call_/)
      expect(retried.calls[0]?.id).not.toBe(halted.calls[0]?.id)
      // Nothing asked again: the turn is the one the sweep's model call produced.
      expect(server.requests).toHaveLength(3)
      // Retried again, the same turn (the same caller ids).
      const again = await door.send(b.openai, follow)
      expect(again.calls).toEqual(retried.calls)
      expect(server.requests).toHaveLength(3)

      server.enqueue((req) => ({ text: `done with ${req.toolResults.at(-1)?.content}` }))
      const next = await door.send(b.openai, retried.followUp("R2"))
      expect(next.text).toBe("done with R2")
      expect(next.calls).toEqual([])
      expect(server.requests).toHaveLength(4)
      expect(server.requests[3]?.toolResults.at(-1)).toMatchObject({ id: "u2", content: "R2" })
      expect(await b.host.listPending()).toEqual([])
    })

    it("the retry gets the final answer; other results for the same calls stay refused (409)", async () => {
      const { b, follow, halted } = await sweptFollowUp(door, { text: "the answer" })

      const other = await b.app.request(door.path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(halted.followUp("not R")),
      })
      expect(other.status).toBe(409)

      const retried = await door.send(b.openai, follow)
      expect(retried.text).toBe("the answer")
      expect(retried.calls).toEqual([])
      expect((await door.send(b.openai, follow)).text).toBe("the answer")
      expect(server.requests).toHaveLength(3)

      const otherAgain = await b.app.request(door.path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(halted.followUp("not R")),
      })
      expect(otherAgain.status).toBe(409)
      expect(server.requests).toHaveLength(3)
    })
  })
})

describe("a retry racing the delivery that applied its results", () => {
  it("both get one turn: the first settler's, whose next halt alone is indexed", async () => {
    server.enqueue(
      { toolCalls: [{ id: "u1", name: "t", arguments: {} }] },
      { toolCalls: [{ id: "u2", name: "t", arguments: {} }] },
      (req) => ({ text: `done with ${req.toolResults.at(-1)?.content}` }),
    )
    // The proxy records of process `a` are written through a gate: its settling of the follow-up
    // waits there, after the run was saved, while the caller's retry reaches process `b`.
    let reached!: () => void
    const atGate = new Promise<void>((resolve) => {
      reached = resolve
    })
    let open!: () => void
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const gated = new Proxy(store, {
      get(target, prop) {
        if (prop === "createSnapshot" || prop === "putSnapshot")
          return async (key: string, value: unknown) => {
            if (key.startsWith("relay-proxy/replay/")) {
              reached()
              await gate
            }
            return target[prop](key, value)
          }
        const value = Reflect.get(target, prop, target)
        return typeof value === "function" ? value.bind(target) : value
      },
    })
    const door = chatDoor(false)
    const a = proxyProcess(gated)
    const b = proxyProcess()
    const halted = await door.send(a.openai, door.first)
    const follow = halted.followUp("R")
    const first = door.send(a.openai, follow)
    await atGate

    const retried = await door.send(b.openai, follow)
    open()
    const answered = await first
    expect(retried.calls.map((c) => c.name)).toEqual(["t"])
    expect(answered.calls).toEqual(retried.calls)
    expect(server.requests).toHaveLength(2)

    const next = await door.send(a.openai, answered.followUp("R2"))
    expect(next.text).toBe("done with R2")
    expect(server.requests).toHaveLength(3)
  })
})

describe("other results for calls whose results were given", () => {
  it("are refused (409, not to be retried) while the first ones wait after a failed attempt; those then finish the run", async () => {
    server.enqueue(
      { toolCalls: [{ id: "u1", name: "t", arguments: {} }] },
      { status: 503, text: "later" },
      (req) => ({ text: `done with ${req.toolResults.at(-1)?.content}` }),
    )
    const door = chatDoor(false)
    const a = proxyProcess()
    const halted = await door.send(a.openai, door.first)
    const post = (body: unknown) =>
      a.app.request(door.path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    expect((await post(halted.followUp("R"))).status).toBe(503)
    const other = await post(halted.followUp("not R"))
    expect(other.status).toBe(409)
    expect(other.headers.get("x-should-retry")).toBe("false")
    expect(((await other.json()) as any).error.message).toMatch(/other results/)
    expect(server.requests).toHaveLength(2)
    expect((await door.send(a.openai, halted.followUp("R"))).text).toBe("done with R")
    expect(server.requests).toHaveLength(3)
  })
})
