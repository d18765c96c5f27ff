import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, expect, it } from "vitest"
import { childProcesses } from "./kill-harness.js"
import { connectClient } from "./server-harness.js"

const SERVER = fileURLToPath(new URL("./fixtures/store-host-mcp-server.mjs", import.meta.url))
const processes = childProcesses()
let dir: string
let llm: FakeLLMServer

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tnx-mcp-kill-"))
  llm = await createFakeLLMServer()
  llm.addRule({
    match: (req) => req.system === "deployer",
    reply: (req) =>
      req.toolResults.length > 0
        ? { text: `done: ${req.toolResults.map((r) => r.content).join("|")}` }
        : { toolCalls: [{ id: "d1", name: "deploy", arguments: { target: req.lastUserText } }] },
  })
})

afterAll(async () => {
  processes.killAll()
  await llm?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Starts a serving process on the shared SQLite file; its first line is its URL. */
async function serve(logFile: string) {
  const job = { db: join(dir, "runs.db"), llmUrl: llm.url, logFile }
  const { line, child } = await processes.start(SERVER, JSON.stringify(job))
  return { url: line, child }
}

it.each([
  {
    what: "an approval asked by a process that is then SIGKILLed is answered through its replacement; the tool runs once",
    log: "deploys.jsonl",
    call: { name: "deploy", arguments: { prompt: "prod" } },
    text: "done: deployed prod",
    logged: { deployed: "prod" },
  },
  {
    what: "a plain tool's approval (needsApproval) survives its serving process's SIGKILL and runs once after",
    log: "purges.jsonl",
    call: { name: "purge", arguments: { cache: "images" } },
    text: "purged images",
    logged: { purged: "images" },
  },
])(
  "$what",
  async ({ log, call, text, logged }) => {
    const logFile = join(dir, log)
    writeFileSync(logFile, "")
    const first = await serve(logFile)
    const asking = await connectClient(first.url, { elicitation: { form: {} } })
    const parked = (await asking.callTool(call, { allowInputRequired: true })) as unknown as {
      inputRequests: Record<string, unknown>
      requestState: string
    }
    const id = Object.keys(parked.inputRequests)[0] as string
    await asking.close()
    await processes.kill(first.child)

    const second = await serve(logFile)
    const answering = await connectClient(second.url, { elicitation: { form: {} } })
    const retry = () =>
      answering.callTool(
        {
          ...call,
          inputResponses: { [id]: { action: "accept", content: { approved: true } } },
          requestState: parked.requestState,
        } as never,
        { allowInputRequired: true },
      )
    expect(await retry()).toMatchObject({ content: [{ text }], isError: false })
    expect(await retry()).toMatchObject({ content: [{ text }] })
    await answering.close()
    const runs = readFileSync(logFile, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
    expect(runs).toEqual([{ ...logged, pid: second.child.pid }])
  },
  60_000,
)
