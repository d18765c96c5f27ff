import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"

const WORKER = fileURLToPath(new URL("./fixtures/traced-worker.mjs", import.meta.url))
const run = promisify(execFile)

interface Span {
  name: string
  traceId: string
  spanId: string
  parent?: string
  attributes: Record<string, unknown>
  events: { name: string; attributes: Record<string, unknown> }[]
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[]
}
interface Outcome {
  status: string
  text?: string
  pending?: { id: string; kind: string; data?: Record<string, unknown> }
  stored?: { id: string; data?: Record<string, unknown> }
  spans: Span[]
}

let server: FakeLLMServer
let dir: string
beforeAll(async () => {
  server = await createFakeLLMServer()
  dir = mkdtempSync(join(tmpdir(), "tnx-trace-"))
})
beforeEach(() => server.reset())
afterAll(async () => {
  await server?.close()
  rmSync(dir, { recursive: true, force: true })
})

async function worker(mode: string, id: string, answer?: unknown): Promise<Outcome> {
  const args = [WORKER, mode, `sqlite:${join(dir, "traces.db")}`, id, `${server.url}/v1`]
  if (answer !== undefined) args.push(JSON.stringify(answer))
  const { stdout } = await run(process.execPath, args, { timeout: 20_000 })
  return JSON.parse(stdout.trim().split("\n").at(-1) as string) as Outcome
}

const named = (spans: Span[], name: string) => spans.filter((s) => s.name === name)

describe("one decision traced across processes (SQLite)", () => {
  it("the resuming process's run links to the run that asked, through the stored request", async () => {
    const id = `c-${randomUUID()}`
    server.enqueue({ toolCalls: [{ id: "p1", name: "pay", arguments: { amount: 5 } }] }, (req) => ({
      text: `final: ${req.toolResults[0]?.content}`,
    }))
    const asked = await worker("halt", id)
    expect(asked.status).toBe("pending")
    const [askRun] = named(asked.spans, "invoke_agent")
    expect(askRun?.events).toEqual([
      {
        name: "toolnexus.suspension",
        attributes: { "toolnexus.request.id": asked.pending?.id, "toolnexus.request.kind": "approval" },
      },
    ])
    const traceparent = `00-${askRun?.traceId}-${askRun?.spanId}-01`
    expect(asked.stored?.data?.trace).toEqual({ traceparent })
    expect(named(asked.spans, "chat m")[0]?.parent).toBe(askRun?.spanId)

    const resumed = await worker("resume", id, { id: asked.pending?.id, ok: true })
    expect(resumed).toMatchObject({ status: "done", text: "final: paid 5" })
    const [resumeRun] = named(resumed.spans, "invoke_agent")
    expect(resumeRun?.traceId).not.toBe(askRun?.traceId)
    expect(resumeRun?.attributes["gen_ai.conversation.id"]).toBe(id)
    expect(resumeRun?.links).toEqual([
      {
        traceId: askRun?.traceId,
        spanId: askRun?.spanId,
        attributes: { "toolnexus.request.id": asked.pending?.id },
      },
    ])
    const [tool] = named(resumed.spans, "execute_tool pay")
    expect(tool?.parent).toBe(resumeRun?.spanId)
    expect(tool?.attributes["toolnexus.tool.outcome"]).toBe("ok")
  })

  it("a parked sub-agent tree: every resumed handle's run links to the leaf that asked", async () => {
    const key = `rt-${randomUUID()}`
    server.addRule({
      match: (r) => r.system === "parent" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "task", arguments: { agent: "asker", prompt: "ask" } }] },
    })
    server.addRule({
      match: (r) => r.system === "parent",
      reply: (r) => ({ text: `parent: ${r.toolResults[0]?.content}` }),
    })
    server.addRule({
      match: (r) => r.system === "asker" && r.toolResults.length === 0,
      reply: { toolCalls: [{ name: "pay", arguments: { amount: 7 } }] },
    })
    server.addRule({
      match: (r) => r.system === "asker",
      reply: (r) => ({ text: `asker: ${r.toolResults[0]?.content}` }),
    })
    const asked = await worker("runtime-halt", key)
    expect(asked.status).toBe("pending")
    const parent = named(asked.spans, "invoke_agent approverParent")[0] as Span
    const task = named(asked.spans, "execute_tool task")[0] as Span
    const leaf = named(asked.spans, "invoke_agent asker")[0] as Span
    expect(task.parent).toBe(parent.spanId)
    expect(leaf.parent).toBe(task.spanId)
    expect(asked.pending?.data?.trace).toEqual({ traceparent: `00-${leaf.traceId}-${leaf.spanId}-01` })

    const resumed = await worker("runtime-resume", key, { id: asked.pending?.id, ok: true })
    expect(resumed).toMatchObject({ status: "done", text: "parent: asker: paid 7" })
    const runs = resumed.spans.filter((s) => s.name.startsWith("invoke_agent"))
    expect(runs.map((s) => s.name).sort()).toEqual(["invoke_agent approverParent", "invoke_agent asker"])
    for (const r of runs) expect(r.links.map((l) => l.spanId)).toEqual([leaf.spanId])
  })
})
