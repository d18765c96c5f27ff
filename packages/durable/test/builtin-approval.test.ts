import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { AnswerConflictError, createClient, createToolkit } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { deliverAnswer } from "../src/resume/deliver-answer.js"
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

/** One worker: its own connection to the shared database file, its own client and toolkit. */
async function worker(file: string, root: string) {
  const store = new SqliteStore({ path: file })
  const client = createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    store,
    retries: 0,
  })
  const toolkit = await createToolkit({ builtins: { root } })
  return { store, client, toolkit }
}

it("an approved bash runs once when two workers deliver the answer at the same moment, and never on a redelivery", async () => {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-builtin-approval-")))
  dirs.push(dir)
  const file = path.join(dir, "runs.db")
  const root = path.join(dir, "root")
  mkdirSync(root)
  server.reset()
  server.addRule({
    match: (r) => r.toolResults.length === 0,
    reply: { toolCalls: [{ name: "bash", arguments: { command: "echo ran >> log.txt && echo appended" } }] },
  })
  server.addRule({
    match: (r) => r.toolResults.length > 0,
    reply: (r) => ({ text: `done: ${r.toolResults[0]?.content}` }),
  })

  const first = await worker(file, root)
  const halted = await first.client.ask("append a line", { toolkit: first.toolkit, id: "ops-1" })
  expect(halted.status).toBe("pending")
  const request = halted.pending as NonNullable<typeof halted.pending>
  expect(request.kind).toBe("approval")
  expect(request.data).toMatchObject({
    server: "builtin",
    tool: "bash",
    args: { command: "echo ran >> log.txt && echo appended" },
  })
  // Nothing ran before the answer.
  expect(() => readFileSync(path.join(root, "log.txt"))).toThrow()

  const second = await worker(file, root)
  const answer = { id: request.id, ok: true }
  const outcomes = await Promise.allSettled([
    deliverAnswer(first.store, answer, { client: first.client, toolkit: first.toolkit }),
    deliverAnswer(second.store, answer, { client: second.client, toolkit: second.toolkit }),
  ])
  const fulfilled = outcomes.filter((o) => o.status === "fulfilled")
  const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected")
  expect(fulfilled).toHaveLength(1)
  expect(rejected).toHaveLength(1)
  expect(rejected[0]?.reason).toBeInstanceOf(AnswerConflictError)
  const delivered = (fulfilled[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof deliverAnswer>>>).value
  expect(delivered.kind === "conversation" && delivered.result.text).toBe("done: appended\n")
  expect(readFileSync(path.join(root, "log.txt"), "utf8")).toBe("ran\n")

  // A later redelivery is refused and runs nothing.
  await expect(
    deliverAnswer(second.store, answer, { client: second.client, toolkit: second.toolkit }),
  ).rejects.toBeInstanceOf(AnswerConflictError)
  expect(readFileSync(path.join(root, "log.txt"), "utf8")).toBe("ran\n")
  await first.store.close()
  await second.store.close()
})
