import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { fileURLToPath } from "node:url"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { Answer, Request } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { elicitingServer } from "./elicit-server.js"
import { type ServedMcp, serveMcp } from "./http-server.js"
import { type OAuthFixture, serveOAuthMcp } from "./oauth-server.js"
import { serveStateless } from "./stateless-server.js"

const WORKER = fileURLToPath(new URL("./fixtures/durable-worker.mjs", import.meta.url))
const run = promisify(execFile)
const dir = mkdtempSync(join(tmpdir(), "tnx-mcp-durable-"))
let llm: FakeLLMServer
beforeAll(async () => {
  llm = await createFakeLLMServer()
})
afterAll(async () => {
  await llm?.close()
  rmSync(dir, { recursive: true, force: true })
})
beforeEach(() => llm.reset())

interface Outcome {
  pid: number
  result: { status: string; text: string; pending?: Request }
}

/** Runs one step in a fresh node process and returns what it printed. */
async function step(job: Record<string, unknown>): Promise<Outcome> {
  const { stdout } = await run(
    process.execPath,
    [WORKER, JSON.stringify({ llmUrl: `${llm.url}/v1`, ...job })],
    {
      timeout: 30_000,
    },
  )
  return JSON.parse(stdout.trim().split("\n").at(-1) as string)
}

const fresh = (soul: string) => (r: FakeRequestView) => r.system === soul && r.toolResults.length === 0
function leadDelegates(): void {
  llm.addRule({
    match: fresh("lead"),
    reply: { toolCalls: [{ name: "task", arguments: { agent: "clerk", prompt: "go" } }] },
  })
  llm.addRule({
    match: (r) => r.system === "lead",
    reply: (r) => ({ text: `lead: ${r.toolResults.at(-1)?.content}` }),
  })
}

it("an elicitation in a sub-agent halts durably; a new process answers it and the tree finishes", async () => {
  const log = { elicitations: 0, calls: 0 }
  const served: ServedMcp = await serveMcp(elicitingServer(log))
  try {
    leadDelegates()
    llm.addRule({
      match: fresh("clerk"),
      reply: { toolCalls: [{ name: "shop__book", arguments: { guests: 3 } }] },
    })
    llm.addRule({
      match: (r) => r.system === "clerk",
      reply: (r) => ({ text: `clerk: ${r.toolResults.at(-1)?.content}` }),
    })
    const job = { db: join(dir, "elicit.db"), mcpUrl: served.url, tokenFile: join(dir, "none.json") }

    const first = await step({ ...job, step: "start" })
    expect(first.result.status).toBe("pending")
    const request = first.result.pending as Request
    expect(request).toMatchObject({
      kind: "input",
      prompt: "Which date?",
      data: { server: "shop", tool: "book", path: ["root", "lead.1", "clerk.1"] },
    })
    expect(log.elicitations).toBe(1)

    const answer: Answer = { id: request.id, ok: true, data: { date: "2027-07-08" } }
    const second = await step({ ...job, step: "answer", answer })
    expect(second.pid).not.toBe(first.pid)
    expect(second.result).toMatchObject({
      status: "done",
      text: "lead: clerk: booked 3 for 2027-07-08",
      delivered: "runtime",
    })
    // The re-issued call's elicitation was answered from the stored answer: nobody was asked again.
    expect(log.elicitations).toBe(2)
    expect(log.calls).toBe(2)
  } finally {
    await served.close()
  }
})

it("2026-07-28: an MRTR elicitation parks in SQLite; a second process answers it, and the server completes the call once", async () => {
  const served = await serveStateless()
  try {
    leadDelegates()
    llm.addRule({
      match: fresh("clerk"),
      reply: { toolCalls: [{ name: "shop__book", arguments: { guests: 3 } }] },
    })
    llm.addRule({
      match: (r) => r.system === "clerk",
      reply: (r) => ({ text: `clerk: ${r.toolResults.at(-1)?.content}` }),
    })
    const job = { db: join(dir, "mrtr.db"), mcpUrl: served.url, tokenFile: join(dir, "none.json") }

    const first = await step({ ...job, step: "start" })
    expect(first.result.status).toBe("pending")
    const request = first.result.pending as Request
    expect(request).toMatchObject({
      kind: "input",
      prompt: "Which date?",
      data: { server: "shop", tool: "book", mcpRound: { requestState: "guests=3" } },
    })
    expect(served.bookCalls).toBe(1)

    const answer: Answer = { id: request.id, ok: true, data: { date: "2027-07-08" } }
    const second = await step({ ...job, step: "answer", answer })
    expect(second.pid).not.toBe(first.pid)
    expect(second.result).toMatchObject({
      status: "done",
      text: "lead: clerk: booked guests=3 on 2027-07-08",
    })
    // One retry of the round from the second process: one completed call, nobody asked again.
    expect(served.bookCalls).toBe(2)
    expect(served.booked).toBe(1)
  } finally {
    await served.close()
  }
})

it("a call that elicits twice, answered across restarts: the re-issued call replays every earlier answer from ctx.request", async () => {
  const log = { elicitations: 0, calls: 0 }
  const served: ServedMcp = await serveMcp(elicitingServer(log))
  try {
    leadDelegates()
    llm.addRule({ match: fresh("clerk"), reply: { toolCalls: [{ name: "shop__plan", arguments: {} }] } })
    llm.addRule({
      match: (r) => r.system === "clerk",
      reply: (r) => ({ text: `clerk: ${r.toolResults.at(-1)?.content}` }),
    })
    const job = { db: join(dir, "plan.db"), mcpUrl: served.url, tokenFile: join(dir, "none.json") }

    const first = await step({ ...job, step: "start" })
    const date = first.result.pending as Request
    expect(date).toMatchObject({ kind: "input", prompt: "Which date?" })

    // A new process answers the date; the re-issued call replays it and the server asks the time.
    const second = await step({
      ...job,
      step: "answer",
      answer: { id: date.id, ok: true, data: { date: "2027-04-01" } },
    })
    expect(second.result.status).toBe("pending")
    const time = second.result.pending as Request
    expect(time).toMatchObject({ kind: "input", prompt: "What time?" })
    // The date's answer rides on the stored request, so it outlives this process.
    expect(Object.values(time.data?.answered as object)).toEqual([{ ok: true, data: { date: "2027-04-01" } }])

    // A third process answers the time: the call gets both answers, nobody is asked the date again.
    const third = await step({
      ...job,
      step: "answer",
      answer: { id: time.id, ok: true, data: { time: "19:30" } },
    })
    expect(new Set([first.pid, second.pid, third.pid]).size).toBe(3)
    expect(third.result).toMatchObject({ status: "done", text: "lead: clerk: planned 2027-04-01 at 19:30" })
    // Server-side: the date asked in all three calls, the time in the last two; the user: once each.
    expect(log.calls).toBe(3)
    expect(log.elicitations).toBe(5)
  } finally {
    await served.close()
  }
  // Three node processes one after another: under a loaded machine that outlasts the default.
}, 90_000)

it("an OAuth login started in one process finishes in another; tokens stay in the host's token store", async () => {
  const fixture: OAuthFixture = await serveOAuthMcp(() => {
    const server = new McpServer({ name: "secure", version: "1.0.0" })
    server.registerTool("whoami", { description: "Who am I" }, async (extra) => ({
      content: [{ type: "text", text: `client ${extra.authInfo?.clientId}` }],
    }))
    return server
  })
  try {
    leadDelegates()
    llm.addRule({ match: fresh("clerk"), reply: { toolCalls: [{ name: "shop__sign_in", arguments: {} }] } })
    llm.addRule({
      match: (r) => r.system === "clerk" && String(r.toolResults[0]?.content).startsWith("signed in"),
      reply: { toolCalls: [{ name: "shop__whoami", arguments: {} }] },
    })
    llm.addRule({
      match: (r) => r.system === "clerk",
      reply: (r) => ({ text: `clerk: ${r.toolResults.at(-1)?.content}` }),
    })
    const tokenFile = join(dir, "tokens.json")
    const job = { db: join(dir, "oauth.db"), mcpUrl: fixture.url, tokenFile }

    const first = await step({ ...job, step: "start" })
    const request = first.result.pending as Request
    expect(request).toMatchObject({ kind: "authorization", data: { server: "shop" } })
    expect(request.url).toMatch(/\/authorize\?/)

    const callback = await fixture.login(request.url as string)
    const answer: Answer = { id: request.id, ok: true }
    const second = await step({ ...job, step: "answer", answer, callback })
    expect(second.result).toMatchObject({
      status: "done",
      text: expect.stringMatching(/^lead: clerk: client client-/),
    })

    const stored = readFileSync(tokenFile, "utf8")
    expect(stored).toContain(fixture.issued[0])
    const db = readFileSync(join(dir, "oauth.db")).toString("latin1")
    const printed = JSON.stringify([first, second])
    for (const token of fixture.issued) {
      expect(db).not.toContain(token)
      expect(printed).not.toContain(token)
    }
  } finally {
    await fixture.close()
  }
})
