import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { type Request, ToolnexusError, createToolkit, pendingOf } from "@toolnexus/core"
import { afterEach, describe, expect, it } from "vitest"
import { a2aTool, createA2ATool } from "../src/a2a-tool.js"
import { A2AConnectError } from "../src/errors.js"
import { scriptedClient } from "./helpers.js"
import { type RemoteAgent, TaskState, startRemoteAgent } from "./remote-agent.js"

// Every case talks to the real @a2a-js/sdk server: its DefaultRequestHandler and express
// JSON-RPC transport, with a scripted AgentExecutor behind them.

const remotes: RemoteAgent[] = []
async function remote(opts: Parameters<typeof startRemoteAgent>[0] = {}) {
  const r = await startRemoteAgent(opts)
  remotes.push(r)
  return r
}
afterEach(async () => {
  for (const r of remotes.splice(0)) await r.close()
})

const textOf = (m: { parts: { content?: { $case: string; value?: unknown } }[] }) =>
  m.parts.map((p) => (p.content?.$case === "text" ? p.content.value : JSON.stringify(p.content?.value)))

describe("a2aTool: the card", () => {
  it("takes name, description and schema from the card", async () => {
    const r = await remote({ name: "Travel Desk!" })
    const tool = await a2aTool({ url: r.url })
    expect(tool).toMatchObject({
      name: "Travel_Desk",
      description: "Books trips.\nbook: books a flight",
      source: "a2a",
      inputSchema: { type: "object", required: ["prompt"] },
    })
    const named = await a2aTool({ url: r.url, name: "travel", description: "d" })
    expect(named).toMatchObject({ name: "travel", description: "d" })
  })

  it("a card that cannot be read rejects A2AConnectError naming the URL", async () => {
    const r = await remote()
    const url = r.url
    await r.close()
    const error = await a2aTool({ url }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(A2AConnectError)
    expect(error).toMatchObject({ code: "TNX_A2A_CONNECT", url })
    expect((error as Error).message).toContain(url)
    expect(ToolnexusError.isInstance(error)).toBe(true)
    // A server that answers, but with no card.
    const notFound = createServer((_req, res) => res.writeHead(404).end("no card here"))
    await new Promise<void>((resolve) => notFound.listen(0, "127.0.0.1", resolve))
    const missing = `http://127.0.0.1:${(notFound.address() as AddressInfo).port}`
    await expect(a2aTool({ url: missing })).rejects.toMatchObject({ code: "TNX_A2A_CONNECT", url: missing })
    await new Promise((resolve) => notFound.close(resolve))
    await expect(a2aTool({})).rejects.toBeInstanceOf(A2AConnectError)
  })

  it("accepts a card given inline (no card request)", async () => {
    const r = await remote()
    r.setScript((e) => e.status(TaskState.TASK_STATE_COMPLETED, `echo ${e.text}`))
    const tool = await a2aTool({ card: r.card, pollIntervalMs: 5 })
    expect(tool.name).toBe("Travel_Desk")
    const result = await tool.execute({ prompt: "hi" }, {})
    expect(result).toMatchObject({ output: "echo hi", isError: false })
  })
})

describe.each([false, true])("a2aTool: completed and failed tasks (streaming %s)", (streaming) => {
  it("completed ⇒ the artifacts' text in order, chunks joined; metadata names the task", async () => {
    const r = await remote({ streaming })
    r.setScript((e) => {
      e.status(TaskState.TASK_STATE_WORKING)
      e.artifact("Flight ", { id: "result" })
      e.artifact("BA117 booked", { id: "result", append: true, lastChunk: true })
      e.artifact("receipt 42", { id: "receipt", lastChunk: true })
      e.status(TaskState.TASK_STATE_COMPLETED, "done")
    })
    const tool = await a2aTool({ url: r.url, pollIntervalMs: 5 })
    const result = await tool.execute({ prompt: "book BA117" }, { idempotencyKey: "conv:call_1" })
    expect(result.output).toBe("Flight BA117 booked\nreceipt 42")
    expect(result.isError).toBe(false)
    expect(result.metadata).toMatchObject({ agent: "Travel Desk", state: "completed" })
    expect(result.metadata?.taskId).toEqual(expect.any(String))
    expect(r.received).toHaveLength(1)
    // messageId from the idempotency key, so a crash-retry repeats the same message.
    expect(r.received[0]?.messageId).toBe("conv:call_1")
    expect(textOf(r.received[0] as never)).toEqual(["book BA117"])
  })

  it("completed without artifacts ⇒ the status text; a Message reply ⇒ its text", async () => {
    const r = await remote({ streaming })
    r.setScript((e) => e.status(TaskState.TASK_STATE_COMPLETED, "all set"))
    const tool = await a2aTool({ url: r.url, pollIntervalMs: 5 })
    expect((await tool.execute({ prompt: "x" }, {})).output).toBe("all set")
    r.setScript((e) => e.reply("just a message"))
    expect(await tool.execute({ prompt: "x" }, {})).toMatchObject({
      output: "just a message",
      isError: false,
    })
  })

  it.each([
    ["failed", TaskState.TASK_STATE_FAILED],
    ["canceled", TaskState.TASK_STATE_CANCELED],
    ["rejected", TaskState.TASK_STATE_REJECTED],
  ])("%s ⇒ an isError result naming the agent and the task", async (name, state) => {
    const r = await remote({ streaming })
    r.setScript((e) => e.status(state, "no seats left"))
    const tool = await a2aTool({ url: r.url, pollIntervalMs: 5 })
    const result = await tool.execute({ prompt: "x" }, {})
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(new RegExp(`^a2a agent "Travel Desk": task \\S+ ${name}: no seats left$`))
    expect(pendingOf(result)).toBeUndefined()
  })

  it("past callTimeoutMs ⇒ CancelTask, then isError 'timed out'", async () => {
    const r = await remote({ streaming })
    r.setScript(async (e) => {
      e.status(TaskState.TASK_STATE_WORKING)
      await e.canceled
    })
    // The deadline passes the moment the call knows its task (no clock to race on a loaded machine).
    let pass: () => void = () => {}
    const tool = await createA2ATool(
      { url: r.url, pollIntervalMs: 5, callTimeoutMs: 2_000 },
      {
        deadline: (ms, fire) => {
          expect(ms).toBe(2_000)
          pass = fire
          return () => {}
        },
        onTask: () => pass(),
      },
    )
    const result = await tool.execute({ prompt: "slow" }, {})
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/^a2a agent "Travel Desk": task \S+ timed out after 2000 ms$/)
    expect(r.cancels).toEqual([result.metadata?.taskId])
  })

  it("ctx.signal aborted ⇒ CancelTask, isError, no throw", async () => {
    const r = await remote({ streaming })
    r.setScript(async (e) => {
      e.status(TaskState.TASK_STATE_WORKING)
      await e.canceled
    })
    const controller = new AbortController()
    // Aborted once the call knows its task, as a caller giving up mid-call would.
    const tool = await createA2ATool({ url: r.url, pollIntervalMs: 5 }, { onTask: () => controller.abort() })
    const result = await tool.execute({ prompt: "slow" }, { signal: controller.signal })
    expect(result).toMatchObject({ isError: true })
    expect(result.output).toMatch(/aborted/)
    expect(r.cancels).toEqual([result.metadata?.taskId])
  })
})

describe("a2aTool: transport failures are results, never throws", () => {
  it("the agent gone after the card was read ⇒ isError naming the agent, no token or header value in it", async () => {
    const r = await remote()
    const tool = await a2aTool({
      url: r.url,
      pollIntervalMs: 5,
      bearerToken: "tok-secret",
      headers: { "x-key": "hdr-secret" },
    })
    await r.close()
    const result = await tool.execute({ prompt: "x" }, {})
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/^a2a agent "Travel Desk": /)
    expect(JSON.stringify(result)).not.toMatch(/tok-secret|hdr-secret/)
  })

  it("a JSON-RPC error ⇒ isError; a missing prompt ⇒ isError", async () => {
    const r = await remote()
    r.setScript(() => {
      throw new Error("executor blew up")
    })
    const tool = await a2aTool({ url: r.url, pollIntervalMs: 5 })
    const result = await tool.execute({ prompt: "x" }, {})
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/^a2a agent "Travel Desk": /)
    expect(await tool.execute({}, {})).toMatchObject({
      isError: true,
      output: expect.stringMatching(/prompt/),
    })
  })

  it("headers expand environment references at call time; bearerToken sends Authorization", async () => {
    const r = await remote()
    r.setScript((e) => e.status(TaskState.TASK_STATE_COMPLETED, "ok"))
    process.env.TNX_A2A_TEST_KEY = "first"
    const tool = await a2aTool({
      url: r.url,
      pollIntervalMs: 5,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an environment reference the tool expands
      headers: { "x-api-key": "${TNX_A2A_TEST_KEY}" },
      bearerToken: "tok-1",
    })
    process.env.TNX_A2A_TEST_KEY = "second"
    await tool.execute({ prompt: "x" }, {})
    expect(r.headers[0]).toMatchObject({ "x-api-key": "second", authorization: "Bearer tok-1" })
    delete process.env.TNX_A2A_TEST_KEY
  })
})

describe("a2aTool: a v0.3 agent", () => {
  it("is spoken to in v0.3 and its tasks map the same way", async () => {
    const r = await remote({ version: "0.3" })
    r.setScript((e) => {
      e.artifact("legacy ok", { lastChunk: true })
      e.status(TaskState.TASK_STATE_COMPLETED)
    })
    const tool = await a2aTool({ url: r.url, pollIntervalMs: 5 })
    const result = await tool.execute({ prompt: "x" }, {})
    expect(result).toMatchObject({ output: "legacy ok", isError: false })
    expect(r.headers.every((h) => h["a2a-version"] === undefined || h["a2a-version"].startsWith("0.3"))).toBe(
      true,
    )
  })
})

describe("a2aTool in a run", () => {
  it("a completed remote task is the tool result the model sees", async () => {
    const r = await remote({ streaming: true })
    r.setScript((e) => {
      e.artifact(`booked: ${e.text}`, { lastChunk: true })
      e.status(TaskState.TASK_STATE_COMPLETED)
    })
    const toolkit = await createToolkit({ extraTools: [await a2aTool({ url: r.url, name: "travel" })] })
    const result = await scriptedClient("travel", "BA117").run("go", { toolkit })
    expect(result.text).toBe("final: booked: BA117")
  })

  it("an unreachable agent is an isError result and the run goes on", async () => {
    const r = await remote()
    const tool = await a2aTool({ url: r.url, name: "travel" })
    await r.close()
    const result = await scriptedClient("travel", "x").run("go", {
      toolkit: await createToolkit({ extraTools: [tool] }),
    })
    expect(result.status).toBe("done")
    expect(result.toolCalls[0]).toMatchObject({ isError: true })
    expect((result.pending as Request | undefined) ?? null).toBeNull()
  })
})
