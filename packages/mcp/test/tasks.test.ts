import { type Request, pendingOf } from "@toolnexus/core"
import { afterEach, describe, expect, it, vi } from "vitest"
import { type McpConnection, connectMcp } from "../src/index.js"
import { UNDER_LOAD } from "./paths.js"
import { type TaskServer, type TaskServerOptions, serveTasks } from "./task-server.js"

const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

async function server(options?: TaskServerOptions): Promise<TaskServer> {
  const served = await serveTasks(options)
  open.push(served)
  return served
}

/** A connection to the task server. */
async function connect(served: TaskServer, callTimeoutMs = 60_000): Promise<McpConnection> {
  const mcp = await connectMcp({ ...UNDER_LOAD, callTimeoutMs, servers: { jobs: { url: served.url } } })
  open.push(mcp)
  return mcp
}

function tool(mcp: McpConnection, name: string) {
  const found = mcp.tools().find((t) => t.name === `jobs__${name}`)
  if (!found) throw new Error(`no tool jobs__${name}`)
  return found
}

/** The request as the run stores it (JSON). */
function stored(result: unknown): Request {
  const request = pendingOf(result as never)
  if (!request) throw new Error(`not a suspension: ${JSON.stringify(result)}`)
  return JSON.parse(JSON.stringify(request)) as Request
}

describe("the tasks extension (io.modelcontextprotocol/tasks)", () => {
  it("announces the extension; a plain result is taken as it is", async () => {
    const served = await server()
    const mcp = await connect(served)
    expect(await tool(mcp, "quick").execute({}, {})).toMatchObject({ isError: false, output: "quick" })
    const call = served.received.find((r) => r.method === "tools/call")
    const meta = call?.params._meta as Record<string, { extensions?: Record<string, unknown> }>
    expect(meta["io.modelcontextprotocol/clientCapabilities"]?.extensions).toEqual({
      "io.modelcontextprotocol/tasks": {},
    })
  })

  it("inline (a waitFor can answer): polls the task at the server's interval until it completes", async () => {
    const served = await server()
    const mcp = await connect(served)
    const call = tool(mcp, "report").execute({}, { resolve: async (req) => ({ id: req.id, ok: true }) })
    await vi.waitFor(() => expect(served.count("tasks/get")).toBeGreaterThan(1))
    served.finish("task-1", "report ready")
    expect(await call).toMatchObject({ isError: false, output: "report ready" })
    // The task's requests name it in Mcp-Name (SEP-2243 routing).
    const gets = served.received.filter((r) => r.method === "tasks/get")
    for (const get of gets) expect(get.header).toBe("task-1")
    expect(served.count("tools/call")).toBe(1)
  })

  it("without a waitFor the call parks on the working task; after a restart, the expired wait polls it, and the result comes once", async () => {
    const served = await server()
    let mcp = await connect(served)
    const first = stored(await tool(mcp, "report").execute({}, {}))
    expect(first).toMatchObject({
      kind: "mcp_task",
      data: { server: "jobs", tool: "report", mcpTask: { taskId: "task-1", pollIntervalMs: 10 } },
    })
    expect(Date.parse(first.expiresAt as string)).toBeLessThanOrEqual(Date.now() + 10)
    await mcp.close()

    // A new process (a new connection), the host's sweep declining the expired wait: still working.
    mcp = await connect(served)
    const expired = { id: first.id, ok: false, reason: "expired" }
    const second = stored(await tool(mcp, "report").execute({}, { answer: expired, request: first }))
    expect(second).toMatchObject({ kind: "mcp_task", data: { mcpTask: { taskId: "task-1" } } })
    expect(second.id).not.toBe(first.id)

    served.finish("task-1", "report ready")
    const third = await tool(mcp, "report").execute(
      {},
      { answer: { id: second.id, ok: false, reason: "expired" }, request: second },
    )
    expect(third).toMatchObject({ isError: false, output: "report ready" })
    expect(served.count("tools/call")).toBe(1)
    expect(served.count("tasks/cancel")).toBe(0)
  })

  it("declining the wait cancels the task (tasks/cancel)", async () => {
    const served = await server()
    const mcp = await connect(served)
    const parked = stored(await tool(mcp, "report").execute({}, {}))
    const declined = await tool(mcp, "report").execute(
      {},
      { answer: { id: parked.id, ok: false, reason: "stop it" }, request: parked },
    )
    expect(declined).toMatchObject({ isError: true, output: `declined: ${parked.prompt} (stop it)` })
    expect(served.tasks.get("task-1")?.status).toBe("cancelled")
  })

  it("a task's input_required is a Request; the answer, in another connection, goes back with tasks/update", async () => {
    const served = await server()
    let mcp = await connect(served)
    const asked = stored(await tool(mcp, "purge").execute({}, {}))
    expect(asked).toMatchObject({
      kind: "input",
      prompt: "Purge the cache?",
      data: { server: "jobs", tool: "purge", mcpTask: { taskId: "task-1", inputRequests: { sure: {} } } },
    })
    // Bounded by the task's TTL: the question expires with the task.
    expect(Date.parse(asked.expiresAt as string)).toBe(
      Date.parse(served.tasks.get("task-1")?.createdAt ?? "") + 3_600_000,
    )
    await mcp.close()

    mcp = await connect(served)
    const answer = { id: asked.id, ok: true, data: { sure: true } }
    expect(await tool(mcp, "purge").execute({}, { answer, request: asked })).toMatchObject({
      isError: false,
      output: "purged",
    })
    const update = served.received.find((r) => r.method === "tasks/update")
    expect(update?.params).toMatchObject({
      taskId: "task-1",
      inputResponses: { sure: { action: "accept", content: { sure: true } } },
    })
    expect(served.count("tools/call")).toBe(1)
  })

  it("inline, the task's question is asked through ctx.resolve", async () => {
    const served = await server()
    const mcp = await connect(served)
    const questions: Request[] = []
    const result = await tool(mcp, "purge").execute(
      {},
      {
        resolve: async (req) => {
          questions.push(req)
          return { id: req.id, ok: true, data: { sure: false } }
        },
      },
    )
    expect(questions.map((q) => q.prompt)).toEqual(["Purge the cache?"])
    expect(result).toMatchObject({ isError: false, output: "kept" })
  })

  it("a declined or expired question cancels the task", async () => {
    const served = await server()
    const mcp = await connect(served)
    for (const [n, answer] of [
      [1, { ok: false, reason: "not now" }],
      [2, { ok: false, reason: "expired" }],
    ] as const) {
      const asked = stored(await tool(mcp, "purge").execute({}, {}))
      const result = await tool(mcp, "purge").execute(
        {},
        { answer: { id: asked.id, ...answer }, request: asked },
      )
      expect(result).toMatchObject({ isError: true, output: `declined: Purge the cache? (${answer.reason})` })
      expect(served.tasks.get(`task-${n}`)?.status).toBe("cancelled")
    }
    expect(served.count("tasks/update")).toBe(0)
  })

  it("a task past its TTL is cancelled, not polled", async () => {
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString()
    const served = await server({ ttlMs: 60_000, createdAt: () => hourAgo })
    const mcp = await connect(served)
    const result = await tool(mcp, "report").execute({}, {})
    expect(result).toMatchObject({
      isError: true,
      output: 'MCP server "jobs": report (task task-1) expired before it ended; it was cancelled',
    })
    expect(served.tasks.get("task-1")?.status).toBe("cancelled")
    expect(served.count("tasks/get")).toBe(0)
  })

  it("a task the server no longer knows is an isError result naming it; the connection stays up", async () => {
    const served = await server()
    const mcp = await connect(served)
    const parked = stored(await tool(mcp, "report").execute({}, {}))
    served.tasks.clear()
    const result = await tool(mcp, "report").execute(
      {},
      { answer: { id: parked.id, ok: false, reason: "expired" }, request: parked },
    )
    expect(result).toMatchObject({
      isError: true,
      output: 'MCP server "jobs": report (task task-1): unknown task',
    })
    expect(mcp.servers()[0]?.status).toBe("ready")
  })
})
