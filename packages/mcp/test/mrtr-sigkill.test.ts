import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Answer, Request } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { type WorkerLine, childProcesses, workerStep } from "./kill-harness.js"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { type StatelessServer, serveStateless } from "./stateless-server.js"

// Issue 35: an MRTR (2026-07-28 `input_required`) elicitation parked in SQLite survives a SIGKILL
// of the process that parked it; a new process answers it and the server completes the call once.
const dir = mkdtempSync(join(tmpdir(), "tnx-mcp-mrtr-kill-"))
const processes = childProcesses()
let llm: FakeLLMServer
let served: StatelessServer

beforeAll(async () => {
  llm = await createFakeLLMServer()
  served = await serveStateless()
})
afterAll(async () => {
  processes.killAll()
  await served?.close()
  await llm?.close()
  rmSync(dir, { recursive: true, force: true })
})
beforeEach(() => {
  llm.reset()
  served.calls.length = 0
})

/** Starts one worker step; resolves with its line (a parked one stays alive). */
const step = (job: Record<string, unknown>) => workerStep(processes, llm.url, job)

/** Waits for a finished worker to exit cleanly (it closes its MCP session and store first). */
const exited = (child: ChildProcess) => processes.exited(child)

const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
function clerkCalls(tool: string, args: Record<string, unknown>): void {
  llm.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "clerk", prompt: "go" } }] },
  })
  llm.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults.at(-1)?.content}` }),
  })
  llm.addRule({ match: fresh("clerk"), reply: { toolCalls: [{ name: tool, arguments: args }] } })
  llm.addRule({
    match: (r) => r.system === "clerk",
    reply: (r) => ({ text: `clerk: ${r.toolResults.at(-1)?.content}` }),
  })
}

/** Parks, checks the round is on the stored request, and SIGKILLs the parked process. */
async function parkedThenKilled(
  parked: { line: WorkerLine; child: ChildProcess },
  round: { prompt: string; requestState: string },
): Promise<Request> {
  expect(parked.line.result?.status).toBe("pending")
  const request = parked.line.result?.pending as Request
  expect(request).toMatchObject({
    kind: "input",
    prompt: round.prompt,
    data: { server: "shop", mcpRound: { requestState: round.requestState } },
  })
  expect(await processes.kill(parked.child)).toBeNull()
  return request
}

it("SIGKILL after the park: a new process answers, the server sees one retry and completes the call once", async () => {
  clerkCalls("shop__book", { guests: 3 })
  const job = { db: join(dir, "book.db"), mcpUrl: served.url }
  const bookedBefore = served.booked

  const request = await parkedThenKilled(await step({ ...job, step: "park" }), {
    prompt: "Which date?",
    requestState: "guests=3",
  })
  expect(served.calls).toEqual([{ tool: "book", responses: [], requestState: undefined }])

  const answer: Answer = { id: request.id, ok: true, data: { date: "2027-07-08" } }
  const second = await step({ ...job, step: "answer", answer })
  expect(second.line.result).toMatchObject({
    status: "done",
    text: "lead: clerk: booked guests=3 on 2027-07-08",
    delivered: "runtime",
  })
  expect(await exited(second.child)).toBe(0)
  // Exactly one retry, carrying the answer and the state the killed process parked with.
  expect(served.calls).toEqual([
    { tool: "book", responses: [], requestState: undefined },
    { tool: "book", responses: ["date"], requestState: "guests=3" },
  ])
  expect(served.booked - bookedBefore).toBe(1)

  // The same answer again, from yet another process: refused, and the server is not called.
  const third = await step({ ...job, step: "answer", answer })
  expect(third.line.error).toMatchObject({ name: "AnswerConflictError", code: "TNX_ANSWER_CONFLICT" })
  expect(await exited(third.child)).toBe(0)
  expect(served.calls).toHaveLength(2)
  expect(served.booked - bookedBefore).toBe(1)
}, 90_000)

it("two rounds, SIGKILL after each park: the last process answers and the server completes the call once", async () => {
  clerkCalls("shop__plan", {})
  const job = { db: join(dir, "plan.db"), mcpUrl: served.url }
  const plannedBefore = served.planned

  const date = await parkedThenKilled(await step({ ...job, step: "park" }), {
    prompt: "Which date?",
    requestState: "plan",
  })
  // A second process answers the date; the server asks the time, and that process parks again.
  const dateAnswer: Answer = { id: date.id, ok: true, data: { date: "2027-04-01" } }
  const second = await step({ ...job, step: "answer", answer: dateAnswer })
  const time = await parkedThenKilled(second, { prompt: "What time?", requestState: "date=2027-04-01" })
  expect(time.id).not.toBe(date.id)
  expect(served.planned - plannedBefore).toBe(0)

  const timeAnswer: Answer = { id: time.id, ok: true, data: { time: "19:30" } }
  const third = await step({ ...job, step: "answer", answer: timeAnswer })
  expect(third.line.result).toMatchObject({
    status: "done",
    text: "lead: clerk: planned 2027-04-01 at 19:30",
    delivered: "runtime",
  })
  expect(await exited(third.child)).toBe(0)
  expect(served.calls).toEqual([
    { tool: "plan", responses: [], requestState: undefined },
    { tool: "plan", responses: ["date"], requestState: "plan" },
    { tool: "plan", responses: ["time"], requestState: "date=2027-04-01" },
  ])
  expect(served.planned - plannedBefore).toBe(1)

  // Either answer again is refused; the server sees no further call.
  for (const answer of [timeAnswer, dateAnswer]) {
    const again = await step({ ...job, step: "answer", answer })
    expect(again.line.error).toMatchObject({ name: "AnswerConflictError", code: "TNX_ANSWER_CONFLICT" })
    expect(await exited(again.child)).toBe(0)
  }
  expect(served.calls).toHaveLength(3)
  expect(served.planned - plannedBefore).toBe(1)
}, 120_000)
