import { type Request, createToolkit, pendingOf } from "@toolnexus/core"
import { afterEach, describe, expect, it } from "vitest"
import { a2aTool } from "../src/a2a-tool.js"
import { scriptedClient } from "./helpers.js"
import { type Emit, type RemoteAgent, TaskState, startRemoteAgent } from "./remote-agent.js"

// input-required / auth-required against the real @a2a-js/sdk server, speaking A2A 1.0 and
// (its legacy compatibility on) v0.3: asked inline through ctx.resolve, or halted and
// continued on the same remote task with exactly one follow-up.

const remotes: RemoteAgent[] = []
async function remote(opts: Parameters<typeof startRemoteAgent>[0] = {}) {
  const r = await startRemoteAgent(opts)
  remotes.push(r)
  return r
}
afterEach(async () => {
  for (const r of remotes.splice(0)) await r.close()
})

const partsOf = (m: { parts: { content?: { $case: string; value?: unknown } }[] }) =>
  m.parts.map((p) => p.content?.value)

/** A booking agent: asks for a seat, then (when `rounds` is 2) for a meal, then books. */
function bookingScript(rounds = 1) {
  const turns = new Map<string, number>()
  return (e: Emit) => {
    const turn = (turns.get(e.taskId) ?? 0) + 1
    turns.set(e.taskId, turn)
    if (turn === 1)
      return e.status(TaskState.TASK_STATE_INPUT_REQUIRED, "Which seat?", { choices: ["12A", "3C"] })
    if (turn === 2 && rounds === 2) return e.status(TaskState.TASK_STATE_INPUT_REQUIRED, "Which meal?")
    e.artifact(`booked after: ${e.text}`, { lastChunk: true })
    e.status(TaskState.TASK_STATE_COMPLETED)
  }
}

/** Every JSON-RPC POST the remote got spoke `version` (v0.3 peers send no header or 0.3). */
function spoke(r: RemoteAgent, version: "1.0" | "0.3"): boolean {
  return r.headers.every((h) =>
    version === "1.0" ? h["a2a-version"] === "1.0" : (h["a2a-version"] ?? "0.3").startsWith("0.3"),
  )
}

const peers = [
  { version: "1.0" as const, streaming: false },
  { version: "1.0" as const, streaming: true },
  { version: "0.3" as const, streaming: false },
  { version: "0.3" as const, streaming: true },
]

describe.each(peers)("a2aTool interrupted (A2A $version, streaming $streaming)", ({ version, streaming }) => {
  it("input-required without ctx.resolve ⇒ a suspension kind input with agent, taskId, contextId, message", async () => {
    const r = await remote({ streaming, version })
    r.setScript(bookingScript())
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const result = await tool.execute({ prompt: "book" }, {})
    const request = pendingOf(result) as Request
    expect(request).toMatchObject({ kind: "input", prompt: "Which seat?" })
    expect(request.id).toMatch(/^pnd-/)
    expect(request.data).toMatchObject({
      agent: "travel",
      taskId: expect.any(String),
      contextId: expect.any(String),
    })
    // The remote status message as A2A JSON.
    expect(request.data?.message).toMatchObject({
      role: "ROLE_AGENT",
      parts: [{ text: "Which seat?" }, { data: { choices: ["12A", "3C"] } }],
    })
    expect(JSON.parse(JSON.stringify(request))).toEqual(request)
    expect(r.headers.length).toBeGreaterThan(0)
    expect(spoke(r, version)).toBe(true)
  })

  it("inline through ctx.resolve: every round asked while the call waits, each one follow-up on the same task", async () => {
    const r = await remote({ streaming, version })
    r.setScript(bookingScript(2))
    const asked: Request[] = []
    const client = scriptedClient("travel", "book", {
      waitFor: (req) => {
        asked.push(req)
        return { id: req.id, ok: true, data: { text: asked.length === 1 ? "12A" : "meal: veg" } }
      },
    })
    const toolkit = await createToolkit({
      extraTools: [await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })],
    })
    const result = await client.run("go", { toolkit })
    expect(result.text).toBe("final: booked after: meal: veg")
    expect(asked.map((q) => q.prompt)).toEqual(["Which seat?", "Which meal?"])
    expect(asked[0]?.data).toMatchObject({ callId: "call_1", tool: "travel", agent: "travel" })
    expect(r.received).toHaveLength(3)
    const [first, second, third] = r.received
    expect(second?.taskId).toBe(first?.taskId || second?.taskId)
    expect(third?.taskId).toBe(second?.taskId)
    expect(second?.messageId).toBe(asked[0]?.id)
    expect(third?.messageId).toBe(asked[1]?.id)
    expect(partsOf(second as never)).toEqual(["12A", { answer: { ok: true, data: { text: "12A" } } }])
  })

  it("inline declined ⇒ CancelTask and `declined: <prompt>`", async () => {
    const r = await remote({ streaming, version })
    r.setScript(bookingScript())
    const client = scriptedClient("travel", "book", { waitFor: (req) => ({ id: req.id, ok: false }) })
    const toolkit = await createToolkit({
      extraTools: [await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })],
    })
    const result = await client.run("go", { toolkit })
    expect(result.toolCalls[0]).toMatchObject({ output: "declined: Which seat?", isError: true })
    expect(r.cancels).toHaveLength(1)
    expect(r.received).toHaveLength(1)
  })

  it("halted, then continueRun: the retry sends exactly one follow-up on the same task", async () => {
    const r = await remote({ streaming, version })
    r.setScript(bookingScript())
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const client = scriptedClient("travel", "book")
    const halted = await client.run("go", { toolkit: await createToolkit({ extraTools: [tool] }) })
    expect(halted.status).toBe("pending")
    const request = halted.pending as Request
    expect(request.data).toMatchObject({ agent: "travel", tool: "travel", callId: "call_1" })
    // A fresh tool and toolkit (as after a restart): only the request's data carries the task.
    const again = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const saved = JSON.parse(JSON.stringify({ messages: halted.messages, pending: request }))
    const done = await scriptedClient("travel", "book").continueRun({
      toolkit: await createToolkit({ extraTools: [again] }),
      ...saved,
      answer: { id: request.id, ok: true, data: { text: "3C" } },
    })
    expect(done.text).toBe("final: booked after: 3C")
    expect(r.received).toHaveLength(2)
    expect(r.received[1]).toMatchObject({ taskId: request.data?.taskId, messageId: request.id })
    expect(spoke(r, version)).toBe(true)
  })

  it("a decline the loop applies cancels the remote task (issue 33), no follow-up sent", async () => {
    const r = await remote({ streaming, version })
    r.setScript(bookingScript())
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const client = scriptedClient("travel", "book")
    const toolkit = await createToolkit({ extraTools: [tool] })
    const halted = await client.run("go", { toolkit })
    const request = halted.pending as Request
    const done = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: request,
      answer: { id: request.id, ok: false, reason: "declined" },
    })
    expect(done.toolCalls.at(-1)).toMatchObject({ output: "declined: Which seat? (declined)", isError: true })
    expect(r.received).toHaveLength(1)
    expect(r.cancels).toEqual([request.data?.taskId])
  })

  it("a resumed task that asks again ⇒ a new suspension on the same task", async () => {
    const r = await remote({ streaming, version })
    r.setScript(bookingScript(2))
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const client = scriptedClient("travel", "book")
    const toolkit = await createToolkit({ extraTools: [tool] })
    const first = await client.run("go", { toolkit })
    const r1 = first.pending as Request
    const second = await client.continueRun({
      toolkit,
      messages: first.messages,
      pending: r1,
      answer: { id: r1.id, ok: true },
    })
    const r2 = second.pending as Request
    expect(r2).toMatchObject({ kind: "input", prompt: "Which meal?", data: { taskId: r1.data?.taskId } })
    expect(r2.id).not.toBe(r1.id)
    const done = await client.continueRun({
      toolkit,
      messages: second.messages,
      pending: r2,
      answer: { id: r2.id, ok: true, data: { text: "meal: fish" } },
    })
    expect(done.text).toBe("final: booked after: meal: fish")
    expect(r.received.map((m) => m.messageId)).toEqual([expect.any(String), r1.id, r2.id])
  })
})

describe.each(["1.0", "0.3"] as const)("a2aTool: auth-required (A2A %s)", (version) => {
  const loginScript = (e: Emit) => {
    if (!e.task)
      return e.status(TaskState.TASK_STATE_AUTH_REQUIRED, "Log in first", { url: "https://login.example/x" })
    e.artifact(`after ${e.text}`, { lastChunk: true })
    e.status(TaskState.TASK_STATE_COMPLETED)
  }

  it("⇒ kind authorization, url from the data part (else the first http(s) URL of the text)", async () => {
    const r = await remote({ version })
    r.setScript(loginScript)
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const request = pendingOf(await tool.execute({ prompt: "x" }, {})) as Request
    expect(request).toMatchObject({
      kind: "authorization",
      prompt: "Log in first",
      url: "https://login.example/x",
    })
    r.setScript((e) =>
      e.status(TaskState.TASK_STATE_AUTH_REQUIRED, "Go to https://sso.example/a?b=1 to log in"),
    )
    expect(pendingOf(await tool.execute({ prompt: "x" }, {}))).toMatchObject({
      url: "https://sso.example/a?b=1",
    })
  })

  it("still waiting on the retry ⇒ one follow-up 'authorized', no credentials", async () => {
    const r = await remote({ version })
    r.setScript(loginScript)
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const client = scriptedClient("travel", "x")
    const toolkit = await createToolkit({ extraTools: [tool] })
    const halted = await client.run("go", { toolkit })
    const request = halted.pending as Request
    const done = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: request,
      answer: { id: request.id, ok: true },
    })
    expect(done.text).toBe("final: after authorized")
    expect(r.received).toHaveLength(2)
    expect(partsOf(r.received[1] as never)).toEqual(["authorized", { answer: { ok: true } }])
    expect(spoke(r, version)).toBe(true)
  })

  it("moved on by itself (the login finished elsewhere) ⇒ no follow-up, the call waits for the task", async () => {
    const r = await remote({ version })
    let finish: () => void = () => {}
    const finished = new Promise<void>((resolve) => {
      finish = resolve
    })
    r.setScript(async (e) => {
      e.status(TaskState.TASK_STATE_AUTH_REQUIRED, "Log in first", { url: "https://login.example/x" })
      // The remote learns of the login on its own channel and carries on.
      await finished
      e.status(TaskState.TASK_STATE_WORKING)
      e.artifact("booked on its own", { lastChunk: true })
      e.status(TaskState.TASK_STATE_COMPLETED)
    })
    const tool = await a2aTool({ url: r.url, name: "travel", pollIntervalMs: 5 })
    const client = scriptedClient("travel", "x")
    const toolkit = await createToolkit({ extraTools: [tool] })
    const halted = await client.run("go", { toolkit })
    const request = halted.pending as Request
    finish()
    const done = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending: request,
      answer: { id: request.id, ok: true },
    })
    expect(done.text).toBe("final: booked on its own")
    expect(r.received).toHaveLength(1)
  })
})
