import { type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import type { AgentDef } from "@toolnexus/agents"
import { defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { serveA2A } from "../src/inbound/serve-a2a.js"
import { answerMessage, message, sdkClient, send } from "./inbound-kit.js"
import { serveFetch } from "./serve-node.js"

// serveA2A with `runtime` + `agent`: a tree per task (host run a2a.<taskId>), saved as
// a2a.<taskId> when it parks, its request answered by the next message through host.deliverAnswer.

let llm: FakeLLMServer
beforeAll(async () => {
  llm = await createFakeLLMServer()
  llm.addRule({
    match: (r) => r.system === "desk" && r.toolResults.length === 0,
    reply: { toolCalls: [{ name: "task", arguments: { agent: "booker", prompt: "book it" } }] },
  })
  llm.addRule({
    match: (r) => r.system === "booker" && r.toolResults.length === 0,
    reply: { toolCalls: [{ name: "book", arguments: { flight: "IB3" } }] },
  })
  llm.addRule({ match: () => true, reply: (r) => ({ text: `${r.system}: ${r.toolResults[0]?.content}` }) })
})
afterAll(() => llm.close())
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

const effects: string[] = []
const book = defineTool({
  name: "book",
  description: "books after approval",
  inputSchema: { type: "object", properties: { flight: { type: "string" } } },
  run: ({ flight }, ctx) => {
    if (!ctx.answer) return pending({ kind: "approval", prompt: `Book ${flight}?` })
    effects.push(String(flight))
    return `booked ${flight}`
  },
})
const registry: Record<string, AgentDef> = {
  desk: { name: "desk", does: "front desk", soul: "desk", team: ["booker"] },
  booker: { name: "booker", does: "books", soul: "booker", tools: [book] },
}

/** The artifact chunks and states of a stream, in order. */
async function collect(stream: AsyncIterable<StreamResponse>) {
  const chunks: { text: string; append: boolean; lastChunk: boolean }[] = []
  const states: TaskState[] = []
  let taskId = ""
  for await (const event of stream) {
    const payload = event.payload
    if (payload?.$case === "task") taskId = payload.value.id
    if (payload?.$case === "statusUpdate") states.push(payload.value.status?.state as TaskState)
    if (payload?.$case === "artifactUpdate") {
      const { artifact, append, lastChunk } = payload.value
      const text = artifact?.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("")
      chunks.push({ text: text ?? "", append, lastChunk })
    }
  }
  return { chunks, states, taskId }
}

async function serve() {
  const store = new SqliteStore({ path: ":memory:" })
  const runtime = {
    registry,
    llm: { baseUrl: `${llm.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" },
  }
  const handler = serveA2A({ card: { name: "desk" }, runtime, agent: "desk", store })
  const http = await serveFetch(handler.fetch)
  cleanups.push(async () => {
    await handler.close()
    await http.close()
    await store.close()
  })
  return { url: http.url, store }
}

describe("serveA2A with a runtime", () => {
  it("a tree per task: the deep approval parks the task with data.path; the next message resumes the tree once", async () => {
    effects.length = 0
    const { url, store } = await serve()
    const client = await sdkClient(url)
    const halted = (await client.sendMessage(send(message("book me IB3")))) as Task
    expect(halted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const [entry] = await store.listPending()
    expect(entry).toMatchObject({
      runtimeKey: `a2a.${halted.id}`,
      request: { kind: "approval", prompt: "Book IB3?" },
    })
    expect(entry?.request.data?.path).toEqual(["root", "desk.1", "booker.1"])
    const done = (await client.sendMessage(send(answerMessage({ ok: true }, halted.id, "approved")))) as Task
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    const artifact = done.artifacts[0]?.parts[0]?.content
    expect(artifact).toEqual({ $case: "text", value: "desk: booker: booked IB3" })
    expect(effects).toEqual(["IB3"])
    await expect(client.sendMessage(send(message("again", halted.id)))).rejects.toThrow(/completed/)
  })

  it("SendStreamingMessage streams the agent's text as append chunks of `result`, before and after a halt", async () => {
    effects.length = 0
    const { url } = await serve()
    const client = await sdkClient(url)
    const halted = await collect(client.sendMessageStream(send(message("book me IB3"))))
    expect(halted.states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED])
    expect(halted.chunks).toEqual([])
    const done = await collect(
      client.sendMessageStream(send(answerMessage({ ok: true }, halted.taskId, "approved"))),
    )
    expect(done.states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED])
    // The desk's text only (the booker's reply is a tool result, not the task's result), in
    // more than one chunk: the first starts the artifact, the rest append, the last closes it.
    const text = done.chunks.map((c) => c.text).join("")
    expect(text).toBe("desk: booker: booked IB3")
    expect(done.chunks.length).toBeGreaterThan(2)
    expect(done.chunks.map((c) => c.append)).toEqual(done.chunks.map((_, i) => i > 0))
    expect(done.chunks.map((c) => c.lastChunk)).toEqual(
      done.chunks.map((_, i) => i === done.chunks.length - 1),
    )
    const task = await client.getTask({ tenant: "", id: halted.taskId, historyLength: 0 })
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: text })
    expect(effects).toEqual(["IB3"])
  })

  it("CancelTask withdraws the tree's parked request", async () => {
    const { url, store } = await serve()
    const client = await sdkClient(url)
    const halted = (await client.sendMessage(send(message("book me IB3")))) as Task
    expect(await store.listPending()).toHaveLength(1)
    const canceled = await client.cancelTask({ tenant: "", id: halted.id, metadata: undefined })
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(await store.listPending()).toHaveLength(0)
  })

  it("bad configurations are ConfigErrors", async () => {
    const store = new SqliteStore({ path: ":memory:" })
    expect(() => serveA2A({ card: { name: "x" }, runtime: { registry }, agent: "nobody", store })).toThrow(
      /no def/,
    )
    expect(() => serveA2A({ card: { name: "x" }, runtime: { registry }, store })).toThrow(/go together/)
    expect(() => serveA2A({ card: { name: "x" } })).toThrow(/needs `client`/)
    await store.close()
  })
})
