import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { AnswerConflictError, createClient, createToolkit, defineTool } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { askWithAnswer } from "../src/resume/ask-with-answer.js"
import { SqliteStore } from "../src/sqlite/index.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterAll(() => server.close())
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const payments: Record<string, unknown>[] = []
/** Declares its approval; the body never looks at `ctx.answer`. */
const pay = defineTool({
  name: "pay",
  description: "Pay someone",
  inputSchema: {
    type: "object",
    properties: { amount: { type: "number", minimum: 1 }, to: { type: "string" } },
    required: ["amount", "to"],
  },
  needsApproval: ({ amount }) => Number(amount) >= 10,
  editableArgs: true,
  run: (args) => {
    payments.push(args)
    return `paid ${args.amount} to ${args.to}`
  },
})

/** A worker as after a restart: its own connection to the database file, client and toolkit. */
async function worker(file: string) {
  const store = new SqliteStore({ path: file })
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
  })
  return { store, client, toolkit: await createToolkit({ extraTools: [pay] }) }
}

it("a declarative approval parks in SQLite with its argument hash and resumes on another worker with the approver's edit, once", async () => {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-declarative-approval-")))
  dirs.push(dir)
  const file = path.join(dir, "runs.db")
  server.reset()
  server.addRule({
    match: (r) => r.toolResults.length === 0,
    reply: { toolCalls: [{ id: "c1", name: "pay", arguments: { to: "bob", amount: 50 } }] },
  })
  server.addRule({
    match: (r) => r.toolResults.length > 0,
    reply: (r) => ({ text: `done: ${r.toolResults[0]?.content}` }),
  })

  const first = await worker(file)
  const halted = await first.client.ask("pay bob 50", { toolkit: first.toolkit, id: "order-7" })
  expect(halted.status).toBe("pending")
  const stored = await first.store.getPending("order-7")
  expect(stored?.kind).toBe("approval")
  expect(stored?.data).toMatchObject({
    tool: "pay",
    args: { to: "bob", amount: 50 },
    callId: "c1",
    editableArgs: true,
  })
  expect(stored?.data?.argsHash).toMatch(/^[0-9a-f]{64}$/)
  expect(payments).toEqual([])
  await first.store.close()

  const second = await worker(file)
  const answer = { id: stored?.id as string, ok: true, data: { args: { to: "bob", amount: 40 } } }
  const resumed = await askWithAnswer(second.client, { id: "order-7", answer, toolkit: second.toolkit })
  expect(resumed.status).toBe("done")
  expect(resumed.text).toBe("done: paid 40 to bob")
  expect(payments).toEqual([{ to: "bob", amount: 40 }])
  expect(resumed.toolCalls[0]?.metadata?.approval).toMatchObject({
    decision: "approved",
    requestId: stored?.id,
    argsHash: stored?.data?.argsHash,
    editedArgs: { to: "bob", amount: 40 },
  })

  // A second delivery is refused with the first decision; nothing runs again.
  await expect(
    askWithAnswer(second.client, { id: "order-7", answer, toolkit: second.toolkit }),
  ).rejects.toBeInstanceOf(AnswerConflictError)
  expect(payments).toHaveLength(1)
  await second.store.close()
})
