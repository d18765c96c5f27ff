import {
  AbortError,
  type Request,
  type RunHost,
  type Tool,
  createInProcessClient,
  createToolkit,
  defineTool,
  hostAgent,
  pending,
} from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMcp } from "../src/index.js"
import { createMcpServer, hostedToolAgents } from "../src/server/index.js"
import { scriptedClient } from "./scripted-model.js"
import { type Served, serveFetch } from "./server-harness.js"

// The tasks extension (SEP-2663) over the real host: raw 2026-07-28 JSON-RPC, so each request
// declares (or not) the extension in its own _meta, as the spec has it.
const KEY = "q".repeat(32)
const TASKS = "io.modelcontextprotocol/tasks"
const ran: string[] = []
const gates = new Map<string, () => void>()
const closing: { close(): Promise<void> }[] = []
let served: Served
const watchers: [string, () => void][] = []
/** Resolves at the next request for `method` to the served server. */
const requested = (method: string) => new Promise<void>((resolve) => watchers.push([method, resolve]))
let engineLike: Served

/** A tool that runs until the test opens its gate (or its run is stopped). */
const waitFor = (label: string, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    gates.set(label, resolve)
    signal?.addEventListener("abort", () => reject(new Error("stopped")))
  })
async function opened(label: string): Promise<void> {
  while (!gates.has(label)) await new Promise((resolve) => setImmediate(resolve))
  gates.get(label)?.()
}

const tools = [
  defineTool({
    name: "quick",
    description: "Answers at once",
    inputSchema: { type: "object", properties: {} },
    run: () => "quick answer",
  }),
  defineTool({
    name: "gated",
    description: "Runs until the test lets it finish",
    inputSchema: { type: "object", properties: { label: { type: "string" } }, required: ["label"] },
    run: async ({ label }, ctx) => {
      await Promise.race([
        waitFor(String(label)),
        new Promise((_, reject) =>
          ctx?.signal?.addEventListener("abort", () => reject(new Error("stopped"))),
        ),
      ])
      ran.push(`gated ${String(label)}`)
      return `finished ${String(label)}`
    },
  }),
  defineTool({
    name: "check_then_delete",
    description: "Checks the file (until the test lets it), then asks, then deletes",
    inputSchema: { type: "object", properties: { file: { type: "string" } }, required: ["file"] },
    run: async ({ file }, ctx) => {
      if (ctx?.answer?.ok) {
        ran.push(`delete ${String(file)}`)
        return `deleted ${String(file)}`
      }
      await waitFor(`check ${String(file)}`, ctx?.signal)
      return pending({
        kind: "input",
        prompt: `Delete ${String(file)}?`,
        data: {
          schema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] },
        },
      })
    },
  }),
  defineTool({
    name: "ask_then_work",
    description: "Asks a name at once, then works (until the test lets it) and greets",
    inputSchema: { type: "object", properties: {} },
    run: async (_args, ctx) => {
      const name = (ctx?.answer?.data as { name?: string } | undefined)?.name
      if (!ctx?.answer?.ok || name === undefined)
        return pending({
          kind: "input",
          prompt: "Your name?",
          data: { schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } },
        })
      await waitFor(`work ${name}`, ctx?.signal)
      ran.push(`greeted ${name}`)
      return `Hello, ${name}!`
    },
  }),
] as Tool[]

beforeAll(async () => {
  const store = createMemoryStore()
  // An agent whose run fails outside any tool (its model step throws, as a crashed engine or
  // provider would): the task's protocol-level failure, unlike a tool's own error.
  const crashy = hostAgent({
    name: "crashy",
    client: createInProcessClient({
      model: "crashy",
      store,
      generate: async () => {
        await waitFor("crash")
        throw new Error("the model is down (secret-token-123)")
      },
    }),
  })
  const host = createStoreHost({
    store,
    agents: [crashy, ...(await hostedToolAgents(tools, { store }))],
    sweepEveryMs: false,
  })
  const mcp = createMcpServer({
    host,
    agents: ["crashy"],
    tools,
    name: "tasks",
    version: "1.0.0",
    stateKeys: [KEY],
    taskAfterMs: 50,
    // A tool of the official server's own: no run the host keeps, so never a task.
    configure: (server) =>
      server.registerTool("configured_slow", { description: "Runs until the test lets it" }, async () => {
        await waitFor("configured")
        return { content: [{ type: "text", text: "configured answer" }] }
      }),
  })
  // Each request's Mcp-Method is announced, so a test can wait for a client's tasks/get.
  served = await serveFetch((req) => {
    const method = req.headers.get("mcp-method")
    for (const [wanted, resolve] of watchers) if (wanted === method) resolve()
    return mcp.fetch(req)
  })
  closing.push(served, { close: () => mcp.close() }, host)
  // An engine host asks its server over HTTP: a deadline it cannot meet aborts the ask at once.
  const engine: RunHost = {
    ...host,
    result: async (runId, opts) => {
      if (opts?.timeoutMs !== undefined && opts.timeoutMs < 20) throw new AbortError("the ask was aborted")
      return host.result(runId, opts)
    },
  }
  const overEngine = createMcpServer({
    host: engine,
    tools,
    name: "tasks",
    version: "1.0.0",
    stateKeys: [KEY],
    taskAfterMs: 0,
  })
  engineLike = await serveFetch(overEngine.fetch)
  closing.push(engineLike, { close: () => overEngine.close() })
})

afterAll(async () => {
  for (const item of closing.reverse()) await item.close()
})

type Reply = { result?: Record<string, unknown>; error?: { code: number; message: string } }

let nextId = 1
async function rpc(
  method: string,
  params: Record<string, unknown>,
  opts: { tasks?: boolean; url?: string } = {},
): Promise<Reply> {
  const name = (params.name ?? params.taskId) as string | undefined
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {
      elicitation: { form: {} },
      ...(opts.tasks === false ? {} : { extensions: { [TASKS]: {} } }),
    },
  }
  const res = await fetch(opts.url ?? served.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(name ? { "mcp-name": name } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params: { ...params, _meta: meta } }),
  })
  const text = await res.text()
  const json = text.startsWith("{") ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? "{}")
  return JSON.parse(json) as Reply
}

async function statusOf(
  taskId: string,
  until: (status: string) => boolean,
): Promise<Record<string, unknown>> {
  for (;;) {
    const got = (await rpc("tasks/get", { taskId })).result as Record<string, unknown>
    if (until(String(got.status))) return got
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe("createMcpServer({ taskAfterMs }): the tasks extension", () => {
  it("advertises the extension; a call that ends in time is a plain result", async () => {
    const discovered = await rpc("server/discover", {})
    expect(discovered.result?.capabilities).toMatchObject({ extensions: { [TASKS]: {} } })
    const done = await rpc("tools/call", { name: "quick", arguments: {} })
    expect(done.result).toMatchObject({ content: [{ text: "quick answer" }], resultType: "complete" })
    expect(done.result).not.toHaveProperty("taskId")
  })

  it("a call still running after taskAfterMs becomes a task; tasks/get inlines its result once it ends", async () => {
    const created = (await rpc("tools/call", { name: "gated", arguments: { label: "a" } })).result as Record<
      string,
      unknown
    >
    expect(created).toMatchObject({ resultType: "task", status: "working", ttlMs: expect.any(Number) })
    expect(created).not.toHaveProperty("requestState")
    const taskId = created.taskId as string
    expect((await rpc("tasks/get", { taskId })).result).toMatchObject({ taskId, status: "working" })
    await opened("a")
    const ended = await statusOf(taskId, (s) => s === "completed")
    expect(ended).toMatchObject({ taskId, result: { content: [{ text: "finished a" }], isError: false } })
  })

  it("a call that parks after taskAfterMs is a task in input_required; tasks/update answers it once and it completes", async () => {
    const created = (await rpc("tools/call", { name: "check_then_delete", arguments: { file: "x.txt" } }))
      .result as Record<string, unknown>
    expect(created).toMatchObject({ resultType: "task", status: "working" })
    const taskId = created.taskId as string
    await opened("check x.txt")
    const waiting = await statusOf(taskId, (s) => s === "input_required")
    const [key, request] =
      Object.entries(
        waiting.inputRequests as Record<string, { method: string; params: { message: string } }>,
      )[0] ?? []
    expect(request).toMatchObject({ method: "elicitation/create", params: { message: "Delete x.txt?" } })
    const ack = await rpc("tasks/update", {
      taskId,
      inputResponses: { [key as string]: { action: "accept", content: { confirm: true } } },
    })
    expect(ack.result).toEqual(expect.objectContaining({ resultType: "complete" }))
    expect(ack.result).not.toHaveProperty("status")
    const ended = await statusOf(taskId, (s) => s === "completed")
    expect(ended).toMatchObject({ result: { content: [{ text: "deleted x.txt" }] } })
    // A repeated update decides nothing twice.
    await rpc("tasks/update", {
      taskId,
      inputResponses: { [key as string]: { action: "accept", content: { confirm: true } } },
    })
    expect(ran.filter((r) => r === "delete x.txt")).toHaveLength(1)
  })

  it("a call that parks within taskAfterMs asks in-band (input_required, no task); the retry whose run outlives taskAfterMs is a task that ends with the answer", async () => {
    const asked = (await rpc("tools/call", { name: "ask_then_work", arguments: {} })).result as Record<
      string,
      unknown
    >
    expect(asked).toMatchObject({ resultType: "input_required", requestState: expect.any(String) })
    expect(asked).not.toHaveProperty("taskId")
    const [key] = Object.keys(asked.inputRequests as Record<string, unknown>)
    const retried = (
      await rpc("tools/call", {
        name: "ask_then_work",
        arguments: {},
        inputResponses: { [key as string]: { action: "accept", content: { name: "Alice" } } },
        requestState: asked.requestState,
      })
    ).result as Record<string, unknown>
    expect(retried).toMatchObject({ resultType: "task", status: "working", taskId: expect.any(String) })
    expect(retried).not.toHaveProperty("requestState")
    expect(retried).not.toHaveProperty("inputRequests")
    await opened("work Alice")
    const ended = await statusOf(retried.taskId as string, (s) => s === "completed")
    expect(ended).toMatchObject({ result: { content: [{ text: "Hello, Alice!" }], isError: false } })
    expect(ran.filter((r) => r === "greeted Alice")).toHaveLength(1)
  })

  it("the repo's own MCP client answers the in-band question inline, then follows the retry's task to its result", async () => {
    const nexus = await connectMcp({ servers: { nexus: { url: served.url } } })
    closing.push(nexus)
    const toolkit = await createToolkit({ extraTools: nexus.tools() })
    const asked: Request[] = []
    const waitFor = async (req: Request) => {
      asked.push(req)
      return { id: req.id, ok: true, data: { name: "Bea" } }
    }
    const polled = requested("tasks/get")
    const run = scriptedClient([{ name: "nexus__ask_then_work", arguments: {} }], { waitFor }).run("greet", {
      toolkit,
    })
    // The work goes on until the client polls the task its retry became.
    await polled
    await opened("work Bea")
    const result = await run
    expect(result.text).toBe("final: Hello, Bea!")
    expect(asked.map((r) => [r.kind, r.prompt])).toEqual([["input", "Your name?"]])
    expect(ran.filter((r) => r === "greeted Bea")).toHaveLength(1)
  })

  it("a tool's own error is completed + isError; a run that fails outside its tools is failed with an error and no result", async () => {
    const created = (await rpc("tools/call", { name: "crashy", arguments: { prompt: "go" } })).result as {
      taskId: string
    }
    await opened("crash")
    const failed = await statusOf(created.taskId, (s) => s !== "working")
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: -32603, message: expect.stringMatching(/^the run failed/) },
    })
    expect(failed).not.toHaveProperty("result")
    expect(JSON.stringify(failed)).not.toContain("secret-token-123")
  })

  it("a tool registered through configure is answered as it is, never as a task, however long it takes", async () => {
    const call = rpc("tools/call", { name: "configured_slow", arguments: {} })
    await opened("configured")
    const done = (await call).result
    expect(done).toMatchObject({ resultType: "complete", content: [{ text: "configured answer" }] })
    expect(done).not.toHaveProperty("taskId")
  })

  it("tasks/cancel stops a working task (cancelled); on a finished task it acks and changes nothing", async () => {
    const created = (await rpc("tools/call", { name: "gated", arguments: { label: "c" } })).result as Record<
      string,
      unknown
    >
    const taskId = created.taskId as string
    const ack = await rpc("tasks/cancel", { taskId })
    expect(ack.result).toMatchObject({ resultType: "complete" })
    expect((await statusOf(taskId, (s) => s !== "working")).status).toBe("cancelled")
    expect(ran).not.toContain("gated c")

    const other = (
      (await rpc("tools/call", { name: "gated", arguments: { label: "d" } })).result as { taskId: string }
    ).taskId
    await opened("d")
    await statusOf(other, (s) => s === "completed")
    expect((await rpc("tasks/cancel", { taskId: other })).result).toMatchObject({ resultType: "complete" })
    expect((await rpc("tasks/get", { taskId: other })).result).toMatchObject({ status: "completed" })
  })

  it("without the extension: no task (the call waits), and tasks/* are refused -32021", async () => {
    const call = rpc("tools/call", { name: "gated", arguments: { label: "e" } }, { tasks: false })
    await opened("e")
    expect((await call).result).toMatchObject({ content: [{ text: "finished e" }] })
    for (const method of ["tasks/get", "tasks/update", "tasks/cancel"])
      expect(
        (await rpc(method, { taskId: "t-1", inputResponses: {} }, { tasks: false })).error,
      ).toMatchObject({ code: -32021 })
  })

  it("on an engine-like host (a result ask with a deadline it cannot meet aborts) a finished task reads completed", async () => {
    const url = engineLike.url
    const created = (await rpc("tools/call", { name: "gated", arguments: { label: "f" } }, { url }))
      .result as {
      taskId: string
    }
    await opened("f")
    let status = ""
    for (let look = 0; look < 200 && status !== "completed"; look++) {
      status = String(
        ((await rpc("tasks/get", { taskId: created.taskId }, { url })).result as { status: string }).status,
      )
      if (status !== "completed") await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(status).toBe("completed")
  })

  it("a tampered or unknown task id is -32602, and a task id is no requestState", async () => {
    const created = (await rpc("tools/call", { name: "check_then_delete", arguments: { file: "y.txt" } }))
      .result as { taskId: string }
    const t = created.taskId
    const tampered = `${t.slice(0, -3)}${t.at(-3) === "A" ? "B" : "A"}${t.slice(-2)}`
    expect((await rpc("tasks/get", { taskId: tampered })).error).toMatchObject({ code: -32602 })
    expect((await rpc("tasks/get", { taskId: "nope" })).error).toMatchObject({ code: -32602 })
    const retried = await rpc("tools/call", {
      name: "check_then_delete",
      arguments: { file: "y.txt" },
      inputResponses: {},
      requestState: t,
    })
    expect(JSON.stringify(retried)).toMatch(/not for check_then_delete|nothing was delivered/)
    expect(ran).not.toContain("delete y.txt")
  })
})
