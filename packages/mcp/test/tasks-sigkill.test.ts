import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Request } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { childProcesses, workerStep } from "./kill-harness.js"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type TaskServer, serveTasks } from "./task-server.js"

// A run parked on an MCP task (tasks extension) survives a SIGKILL while the task works: the
// host's sweep, in new processes, polls the task (the wait expired) and completes the run once.
const dir = mkdtempSync(join(tmpdir(), "tnx-mcp-task-kill-"))
const processes = childProcesses()
let llm: FakeLLMServer
let served: TaskServer

beforeAll(async () => {
  llm = await createFakeLLMServer()
  // Poll interval 0: a parked wait is due at once, so the next process's sweep finds it expired.
  served = await serveTasks({ pollIntervalMs: 0 })
})
afterAll(async () => {
  processes.killAll()
  await served?.close()
  await llm?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Starts one worker step; resolves with its line (a parked one stays alive). */
const step = (job: Record<string, unknown>) => workerStep(processes, llm.url, job)

const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0

it("SIGKILL while the task works: the sweep in a new process polls it, parks again, and completes the run once it ends", async () => {
  llm.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "clerk", prompt: "go" } }] },
  })
  llm.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults.at(-1)?.content}` }),
  })
  llm.addRule({ match: fresh("clerk"), reply: { toolCalls: [{ name: "shop__report", arguments: {} }] } })
  llm.addRule({
    match: (r) => r.system === "clerk",
    reply: (r) => ({ text: `clerk: ${r.toolResults.at(-1)?.content}` }),
  })
  const job = { db: join(dir, "report.db"), mcpUrl: served.url }

  const parked = await step({ ...job, step: "park" })
  expect(parked.line.result?.status).toBe("pending")
  const wait = parked.line.result?.pending as Request
  expect(wait).toMatchObject({ kind: "mcp_task", data: { server: "shop", mcpTask: { taskId: "task-1" } } })
  expect(await processes.kill(parked.child)).toBeNull()

  // Still working: the sweep's process polls, parks on a new wait, and is killed too.
  const polled = await step({ ...job, step: "sweep" })
  expect(polled.line.result).toMatchObject({ status: "pending", delivered: "runtime" })
  const again = polled.line.result?.pending as Request
  expect(again).toMatchObject({ kind: "mcp_task", data: { mcpTask: { taskId: "task-1" } } })
  expect(again.id).not.toBe(wait.id)
  expect(await processes.kill(polled.child)).toBeNull()

  served.finish("task-1", "report ready")
  const done = await step({ ...job, step: "sweep" })
  expect(done.line.result).toMatchObject({
    status: "done",
    text: "lead: clerk: report ready",
    delivered: "runtime",
  })
  // One tool call made the task; every later process only asked about it.
  expect(served.count("tools/call")).toBe(1)
  expect(served.count("tasks/get")).toBe(2)
  expect(served.count("tasks/cancel")).toBe(0)
}, 120_000)
