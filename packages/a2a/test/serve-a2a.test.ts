import { type Message, type Task, TaskState } from "@a2a-js/sdk"
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { RequestMalformedError } from "@a2a-js/sdk/errors"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { afterEach, describe, expect, it } from "vitest"
import { serveA2A } from "../src/inbound/serve-a2a.js"
import { answerMessage, message, rpc, sdkClient, send, travelAgent } from "./inbound-kit.js"

const userMessage = (text: string, extra: Partial<Message> = {}) => message(text, "", extra)
import { serveFetch } from "./serve-node.js"

// Every case drives serveA2A with the SDK's own ClientFactory client (raw JSON-RPC only for
// the bad inputs no client sends), on a SQLite store.

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

async function serve(opts: { bearerTokens?: string[]; maxBodyBytes?: number } = {}) {
  const store = new SqliteStore({ path: ":memory:" })
  const agent = await travelAgent(store)
  const handler = serveA2A({
    card: {
      name: "travel",
      description: "Books flights.",
      skills: [{ id: "book", name: "book", description: "books" }],
    },
    client: agent.client,
    toolkit: agent.toolkit,
    store,
    ...opts,
  })
  const http = await serveFetch(handler.fetch)
  cleanups.push(async () => {
    await handler.close()
    await http.close()
    await store.close()
  })
  return { ...agent, store, handler, url: http.url }
}

const textOf = (m: Message | undefined) =>
  (m?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : p.content?.value))

describe("serveA2A: the agent card", () => {
  it("A2A-Version 1.0 ⇒ the 1.0 card; absent or 0.3 ⇒ v0.3's shape; never authenticated", async () => {
    const { url } = await serve({ bearerTokens: ["t-1"] })
    const v1 = await (
      await fetch(`${url}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })
    ).json()
    expect(v1).toMatchObject({
      name: "travel",
      version: "0.1.0",
      supportedInterfaces: [
        { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
      ],
      capabilities: { streaming: true, pushNotifications: false },
      defaultInputModes: ["text/plain", "application/json"],
      skills: [{ id: "book", name: "book", description: "books" }],
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } } },
    })
    const legacy = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as Record<
      string,
      unknown
    >
    expect(legacy).toMatchObject({ url, protocolVersion: "0.3.0", preferredTransport: "JSONRPC" })
    expect(legacy.supportedInterfaces).toBeUndefined()
  })
})

describe("serveA2A through the SDK client", () => {
  it("SendMessage ⇒ completed, artifact `result` = the final text; GetTask reads it back", async () => {
    const { url } = await serve()
    const client = await sdkClient(url)
    const task = (await client.sendMessage(send(userMessage("hello")))) as Task
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(task.artifacts[0]).toMatchObject({ artifactId: "result" })
    expect(textOf(task.artifacts[0] as never)).toEqual(["you said: hello"])
    const again = await client.getTask({ tenant: "", id: task.id, historyLength: undefined })
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(again.contextId).toBe(task.contextId)
  })

  it("a halted run ⇒ input-required with the prompt and the request; the next message is the Answer, applied once", async () => {
    const { url, effects, store } = await serve()
    const client = await sdkClient(url)
    const halted = (await client.sendMessage(send(userMessage("book BA117", { contextId: "ctx-1" })))) as Task
    expect(halted.contextId).toBe("ctx-1")
    expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const [prompt, data] = textOf(halted.status?.message)
    expect(prompt).toBe("Book BA117?")
    const request = (data as { request: { id: string; kind: string } }).request
    expect(request).toMatchObject({ kind: "approval", prompt: "Book BA117?" })
    expect(await store.listPending()).toHaveLength(1)

    const answer = answerMessage({ ok: true, data: { note: "go" } }, halted.id, "yes, go")
    answer.contextId = "ctx-1"
    const done = (await client.sendMessage(send(answer))) as Task
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(textOf(done.artifacts[0] as never)).toEqual(["done: booked BA117"])
    expect(effects).toEqual(['BA117:{"note":"go"}'])
    // The same message again: the task as it is, nothing applied.
    const repeat = (await client.sendMessage(send(answer))) as Task
    expect(repeat.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(effects).toHaveLength(1)
    // Another message on a terminal task ⇒ -32004 naming its state.
    await expect(client.sendMessage(send(userMessage("again", { taskId: halted.id })))).rejects.toThrow(
      /completed/,
    )
  })

  it("a data part {answer: {ok: false}} declines; answer.id not the open request's or a foreign contextId ⇒ -32602", async () => {
    const { url, effects } = await serve()
    const client = await sdkClient(url)
    const halted = (await client.sendMessage(send(userMessage("book LH1")))) as Task
    const dataMessage = (value: Record<string, unknown>, extra: Partial<Message> = {}) =>
      userMessage("", {
        taskId: halted.id,
        parts: [{ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" }],
        ...extra,
      })
    const wrongId = await rpc(url, {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: {
          messageId: "m-x",
          taskId: halted.id,
          role: "ROLE_USER",
          parts: [{ data: { answer: { id: "pnd-other", ok: true } } }],
        },
      },
    })
    expect(wrongId.json.error.code).toBe(-32602)
    await expect(
      client.sendMessage(send(dataMessage({ answer: { ok: true } }, { contextId: "not-its" }))),
    ).rejects.toThrow()
    const declined = (await client.sendMessage(
      send(dataMessage({ answer: { ok: false, reason: "declined" } })),
    )) as Task
    expect(declined.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(textOf(declined.artifacts[0] as never)[0]).toMatch(/^done: declined: Book LH1\?/)
    expect(effects).toEqual([])
  })

  it("a text-only reply never approves: -32602 naming {answer: {ok}}, nothing delivered, the task still waits; text still answers input", async () => {
    const { url, effects, store } = await serve()
    const client = await sdkClient(url)
    const halted = (await client.sendMessage(send(userMessage("book BA117")))) as Task
    expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const [open] = await store.listPending()
    expect(open?.request.kind).toBe("approval")

    // "no, do not book it" used to become {ok: true, data: {text}} and book the flight.
    const refused = client.sendMessage(send(userMessage("no, do not book it", { taskId: halted.id })))
    // The SDK client maps the JSON-RPC code -32602 back to its RequestMalformedError.
    await expect(refused).rejects.toBeInstanceOf(RequestMalformedError)
    await expect(refused).rejects.toThrow(/data part \{"answer": \{"ok": true\}\}/)
    // Text beside an unrelated data part does not approve either.
    const raw = await rpc(url, {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: {
          messageId: "m-text-data",
          taskId: halted.id,
          role: "ROLE_USER",
          parts: [{ text: "yes" }, { data: { approved: true } }],
        },
      },
    })
    expect(raw.json.error.code).toBe(-32602)
    expect(raw.json.error.message).toMatch(/\{"answer": \{"ok": false, "reason"\?: string\}\}/)
    expect(effects).toEqual([])
    const still = await client.getTask({ tenant: "", id: halted.id, historyLength: undefined })
    expect(still.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect((await store.findRequest(open?.request.id as string))?.state).toBe("open")

    // The explicit decline is applied: the tool never runs.
    const declined = (await client.sendMessage(
      send(answerMessage({ ok: false, reason: "not that one" }, halted.id, "no")),
    )) as Task
    expect(declined.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(textOf(declined.artifacts[0] as never)[0]).toMatch(
      /^done: declined: Book BA117\? \(not that one\)/,
    )
    expect(effects).toEqual([])

    // An `input` request is still answered by text.
    const asked = (await client.sendMessage(send(userMessage("seat BA117")))) as Task
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const seated = (await client.sendMessage(send(userMessage("12A", { taskId: asked.id })))) as Task
    expect(seated.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(effects).toEqual(['seat BA117:{"text":"12A"}'])
  })

  it("SendStreamingMessage ⇒ task, working, artifact chunks, one final status", async () => {
    const { url } = await serve()
    const client = await sdkClient(url)
    const kinds: string[] = []
    let text = ""
    for await (const event of client.sendMessageStream(send(userMessage("stream me")))) {
      const payload = event.payload
      if (!payload) continue
      if (payload.$case === "statusUpdate") kinds.push(`status:${payload.value.status?.state}`)
      else kinds.push(payload.$case)
      if (payload.$case === "artifactUpdate") text += textOf(payload.value.artifact as never).join("")
    }
    expect(kinds[0]).toBe("task")
    expect(kinds[1]).toBe(`status:${TaskState.TASK_STATE_WORKING}`)
    expect(kinds.at(-1)).toBe(`status:${TaskState.TASK_STATE_COMPLETED}`)
    expect(kinds.filter((k) => k.startsWith("status:"))).toHaveLength(2)
    expect(text).toBe("you said: stream me")
  })

  it("CancelTask on a halted task ⇒ canceled, its request withdrawn; a completed task ⇒ -32002; unknown ⇒ -32001", async () => {
    const { url, store, effects } = await serve()
    const client = await sdkClient(url)
    const halted = (await client.sendMessage(send(userMessage("book AF9")))) as Task
    expect(await store.listPending()).toHaveLength(1)
    const canceled = await client.cancelTask({ tenant: "", id: halted.id, metadata: undefined })
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(await store.listPending()).toHaveLength(0)
    // Canceled again ⇒ the task; a message on it ⇒ -32004.
    expect((await client.cancelTask({ tenant: "", id: halted.id, metadata: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    )
    await expect(client.sendMessage(send(userMessage("yes", { taskId: halted.id })))).rejects.toThrow(
      /canceled/,
    )
    expect(effects).toEqual([])
    const done = (await client.sendMessage(send(userMessage("hi")))) as Task
    const notCancelable = await rpc(url, {
      jsonrpc: "2.0",
      id: 2,
      method: "CancelTask",
      params: { id: done.id },
    })
    expect(notCancelable.json.error.code).toBe(-32002)
    const unknown = await rpc(url, { jsonrpc: "2.0", id: 3, method: "GetTask", params: { id: "nope" } })
    expect(unknown.json.error.code).toBe(-32001)
    await expect(client.getTask({ tenant: "", id: "nope", historyLength: undefined })).rejects.toThrow()
  })

  it("SubscribeToTask on a terminal task ⇒ -32004", async () => {
    const { url } = await serve()
    const client = await sdkClient(url)
    const done = (await client.sendMessage(send(userMessage("hi")))) as Task
    const sub = await rpc(url, { jsonrpc: "2.0", id: 4, method: "SubscribeToTask", params: { id: done.id } })
    expect(sub.json.error.code).toBe(-32004)
  })

  it("SubscribeToTask on a running task ⇒ the task, then its events until it settles", async () => {
    const { url, release } = await serve()
    const client = await sdkClient(url)
    const started = (await client.sendMessage(send(userMessage("slow"), true))) as Task
    expect(started.status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED)
    const events: string[] = []
    const stream = client.resubscribeTask({ tenant: "", id: started.id })
    const first = await stream.next()
    events.push(first.value?.payload?.$case ?? "none")
    release()
    for await (const event of stream) {
      const payload = event.payload
      if (payload?.$case === "statusUpdate") events.push(`status:${payload.value.status?.state}`)
      else if (payload) events.push(payload.$case)
    }
    expect(events[0]).toBe("task")
    expect(events.at(-1)).toBe(`status:${TaskState.TASK_STATE_COMPLETED}`)
    expect(events).toContain("artifactUpdate")
  })

  it("CancelTask on a running task ⇒ aborted, canceled, no result written", async () => {
    const { url, release, handler } = await serve()
    const client = await sdkClient(url)
    const started = (await client.sendMessage(send(userMessage("slow"), true))) as Task
    const canceled = await client.cancelTask({ tenant: "", id: started.id, metadata: undefined })
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    release()
    await handler.close() // waits for the aborted run to settle
    const after = await client.getTask({ tenant: "", id: started.id, historyLength: undefined })
    expect(after.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(after.artifacts).toEqual([])
  })

  it("two clients answering one task at once ⇒ one tool effect", async () => {
    const { url, effects } = await serve()
    const a = await sdkClient(url)
    const b = await sdkClient(url)
    const halted = (await a.sendMessage(send(userMessage("book UA5")))) as Task
    const outcomes = await Promise.allSettled([
      a.sendMessage(send(answerMessage({ ok: true }, halted.id, "yes from a"))),
      b.sendMessage(send(answerMessage({ ok: true }, halted.id, "yes from b"))),
    ])
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1)
    expect(effects).toHaveLength(1)
  })

  it("a failing run ⇒ failed with its TNX code only (no message, no stack, no system prompt)", async () => {
    const { url } = await serve()
    const client = await sdkClient(url)
    const task = (await client.sendMessage(send(userMessage("fail")))) as Task
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED)
    const said = JSON.stringify(task)
    expect(textOf(task.status?.message)[0]).toMatch(/^the agent failed \(/)
    expect(said).not.toContain("SECRET")
    expect(said).not.toContain("exploded")
  })
})

describe("serveA2A: a v0.3 client", () => {
  it("reads the v0.3 card and speaks v0.3 (message/send, tasks/get) through the SDK's legacy transport", async () => {
    const { url, effects } = await serve()
    const legacyCompat = { enabled: true }
    const resolver = new DefaultAgentCardResolver({ legacyCompat })
    const raw = await (await fetch(`${url}/.well-known/agent-card.json`)).json()
    const card = resolver.normalizeAgentCard(raw)
    expect(card.supportedInterfaces.map((i) => i.protocolVersion)).toEqual(["0.3.0"])
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ legacyCompat })],
      cardResolver: resolver,
    })
    const client = await factory.createFromAgentCard(card)
    const halted = (await client.sendMessage(send(userMessage("book QF1")))) as Task
    expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const done = (await client.sendMessage(send(answerMessage({ ok: true }, halted.id, "ok")))) as Task
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(effects).toHaveLength(1)
    const legacyCall = await rpc(
      url,
      { jsonrpc: "2.0", id: 9, method: "tasks/get", params: { id: halted.id } },
      { headers: { "a2a-version": "0.3" } },
    )
    expect(legacyCall.json.result).toMatchObject({
      id: halted.id,
      kind: "task",
      status: { state: "completed" },
    })
  })
})

describe.each([
  {
    prompt: "book QF9",
    state: "input-required",
    sdkState: TaskState.TASK_STATE_INPUT_REQUIRED,
    asked: "Book QF9?",
  },
  {
    prompt: "checkin QF9",
    state: "auth-required",
    sdkState: TaskState.TASK_STATE_AUTH_REQUIRED,
    asked: "Sign in to the airline\nhttps://login.example/airline",
  },
])("serveA2A: a v0.3 client and $state", ({ prompt, state, sdkState, asked }) => {
  /** The SDK's ClientFactory on the served v0.3 card: its legacy JSON-RPC transport. */
  async function legacyClient(url: string) {
    const legacyCompat = { enabled: true }
    const resolver = new DefaultAgentCardResolver({ legacyCompat })
    const card = resolver.normalizeAgentCard(await (await fetch(`${url}/.well-known/agent-card.json`)).json())
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ legacyCompat })],
      cardResolver: resolver,
    })
    return factory.createFromAgentCard(card)
  }
  const v03 = { headers: { "a2a-version": "0.3" } }

  it("message/stream halts the task; tasks/get shows it in v0.3's shape with the prompt and the request; the next message answers it once", async () => {
    const { url, store, effects } = await serve()
    const client = await legacyClient(url)
    const states: TaskState[] = []
    let taskId = ""
    for await (const event of client.sendMessageStream(send(userMessage(prompt)))) {
      const payload = event.payload
      if (payload?.$case === "task") taskId = payload.value.id
      if (payload?.$case === "statusUpdate") states.push(payload.value.status?.state as TaskState)
    }
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, sdkState])
    const [pending] = await store.listPending()
    // What a v0.3 peer reads on the wire: kebab-case state, `kind`-tagged parts.
    const read = await rpc(url, { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: taskId } }, v03)
    expect(read.json.result).toMatchObject({
      id: taskId,
      kind: "task",
      status: {
        state,
        message: {
          kind: "message",
          role: "agent",
          parts: [
            { kind: "text", text: asked },
            { kind: "data", data: { request: { id: pending?.request.id } } },
          ],
        },
      },
    })
    const done = (await client.sendMessage(send(answerMessage({ ok: true }, taskId, "yes")))) as Task
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(effects).toHaveLength(1)
    // The same answer again (same messageId) applies nothing; another message is -32004.
    const again = await rpc(
      url,
      {
        jsonrpc: "2.0",
        id: 2,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: "late",
            role: "user",
            taskId,
            parts: [{ kind: "text", text: "yes" }],
          },
        },
      },
      v03,
    )
    expect(again.json.error?.code).toBe(-32004)
    expect(effects).toHaveLength(1)
  })

  it("message/send with a v0.3 answer data part that declines ⇒ completed without the effect", async () => {
    const { url, effects } = await serve()
    const client = await legacyClient(url)
    const halted = (await client.sendMessage(send(userMessage(prompt)))) as Task
    expect(halted.status?.state).toBe(sdkState)
    const declined = await rpc(
      url,
      {
        jsonrpc: "2.0",
        id: 3,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: "no-thanks",
            role: "user",
            taskId: halted.id,
            parts: [
              { kind: "text", text: "no" },
              { kind: "data", data: { answer: { ok: false, reason: "not now" } } },
            ],
          },
        },
      },
      v03,
    )
    expect(declined.json.result).toMatchObject({
      id: halted.id,
      kind: "task",
      status: { state: "completed" },
    })
    expect(effects).toEqual([])
  })
})

describe("serveA2A: bad input gets the protocol's error", () => {
  const msg = { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "hi" }] }

  it.each([
    ["not JSON", { raw: "{nope" }, -32700],
    ["not JSON-RPC 2.0", { body: { id: 1, method: "SendMessage" } }, -32600],
    ["an unknown method", { body: { jsonrpc: "2.0", id: 1, method: "Nope", params: {} } }, -32601],
    [
      "no text or data part",
      { body: { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { ...msg, parts: [] } } } },
      -32602,
    ],
    [
      "a file part",
      {
        body: {
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: {
            message: { ...msg, parts: [{ url: "https://x.example/f.pdf", mediaType: "application/pdf" }] },
          },
        },
      },
      -32005,
    ],
    ["a non-JSON content type", { body: {}, headers: { "content-type": "text/plain" } }, -32005],
    [
      "another A2A version",
      {
        body: { jsonrpc: "2.0", id: 1, method: "SendMessage", params: {} },
        headers: { "a2a-version": "2.0" },
      },
      -32009,
    ],
    ["ListTasks", { body: { jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} } }, -32004],
    [
      "push notifications",
      { body: { jsonrpc: "2.0", id: 1, method: "CreateTaskPushNotificationConfig", params: {} } },
      -32003,
    ],
  ])("%s", async (_name, input: { raw?: string; body?: unknown; headers?: Record<string, string> }, code) => {
    const { url } = await serve()
    const reply = await rpc(url, input.body, input)
    expect(reply.status).toBe(200)
    expect(reply.json.jsonrpc).toBe("2.0")
    expect(reply.json.error.code).toBe(code)
    expect(JSON.stringify(reply.json)).not.toMatch(/at .*\.(ts|js):\d+/)
  })

  it("a body over maxBodyBytes ⇒ HTTP 413", async () => {
    const { url } = await serve({ maxBodyBytes: 64 })
    const reply = await rpc(url, {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { ...msg, parts: [{ text: "x".repeat(500) }] } },
    })
    expect(reply.status).toBe(413)
  })

  it("bearer tokens: none or an unknown one ⇒ 401 + WWW-Authenticate; a task belongs to its token", async () => {
    const { url } = await serve({ bearerTokens: ["tok-a", "tok-b"] })
    const none = await rpc(url, { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } })
    expect(none.status).toBe(401)
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/)
    const wrong = await rpc(url, {}, { headers: { authorization: "Bearer tok-z" } })
    expect(wrong.status).toBe(401)
    const a = await sdkClient(url, { token: "tok-a" })
    const b = await sdkClient(url, { token: "tok-b" })
    const task = (await a.sendMessage(send(userMessage("hi")))) as Task
    expect((await a.getTask({ tenant: "", id: task.id, historyLength: undefined })).id).toBe(task.id)
    const foreign = await rpc(
      url,
      { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: task.id } },
      { headers: { authorization: "Bearer tok-b" } },
    )
    expect(foreign.json.error.code).toBe(-32001)
    await expect(b.getTask({ tenant: "", id: task.id, historyLength: undefined })).rejects.toThrow()
    expect(JSON.stringify(foreign.json)).not.toContain("tok-")
  })
})
