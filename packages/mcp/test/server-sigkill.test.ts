import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, expect, it } from "vitest"
import { connectClient } from "./server-harness.js"

const SERVER = fileURLToPath(new URL("./fixtures/store-host-mcp-server.mjs", import.meta.url))
let dir: string
let llm: FakeLLMServer
const children: ChildProcess[] = []

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
  for (const child of children) child.kill("SIGKILL")
  await llm?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Starts a serving process on the shared SQLite file; resolves with its URL. */
function serve(logFile: string): Promise<{ url: string; child: ChildProcess }> {
  const job = { db: join(dir, "runs.db"), llmUrl: llm.url, logFile }
  const child = spawn(process.execPath, [SERVER, JSON.stringify(job)], {
    stdio: ["ignore", "pipe", "inherit"],
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    let out = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const line = out.split("\n")[0]
      if (out.includes("\n") && line) resolve({ url: line, child })
    })
    child.on("exit", (code) => reject(new Error(`server exited with ${code}`)))
  })
}

it("an approval asked by a process that is then SIGKILLed is answered through its replacement; the tool runs once", async () => {
  const logFile = join(dir, "deploys.jsonl")
  writeFileSync(logFile, "")
  const first = await serve(logFile)
  const asking = await connectClient(first.url, { elicitation: { form: {} } })
  const parked = (await asking.callTool(
    { name: "deploy", arguments: { prompt: "prod" } },
    { allowInputRequired: true },
  )) as unknown as { inputRequests: Record<string, unknown>; requestState: string }
  const id = Object.keys(parked.inputRequests)[0] as string
  await asking.close()
  const killed = new Promise((resolve) => first.child.once("exit", resolve))
  first.child.kill("SIGKILL")
  await killed

  const second = await serve(logFile)
  const answering = await connectClient(second.url, { elicitation: { form: {} } })
  const retry = () =>
    answering.callTool(
      {
        name: "deploy",
        arguments: { prompt: "prod" },
        inputResponses: { [id]: { action: "accept", content: { approved: true } } },
        requestState: parked.requestState,
      } as never,
      { allowInputRequired: true },
    )
  expect(await retry()).toMatchObject({ content: [{ text: "done: deployed prod" }], isError: false })
  expect(await retry()).toMatchObject({ content: [{ text: "done: deployed prod" }] })
  await answering.close()
  const deploys = readFileSync(logFile, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line))
  expect(deploys).toEqual([{ deployed: "prod", pid: second.child.pid }])
}, 60_000)

it("a plain tool's approval (needsApproval) survives its serving process's SIGKILL and runs once after", async () => {
  const logFile = join(dir, "purges.jsonl")
  writeFileSync(logFile, "")
  const first = await serve(logFile)
  const asking = await connectClient(first.url, { elicitation: { form: {} } })
  const parked = (await asking.callTool(
    { name: "purge", arguments: { cache: "images" } },
    { allowInputRequired: true },
  )) as unknown as { inputRequests: Record<string, unknown>; requestState: string }
  const id = Object.keys(parked.inputRequests)[0] as string
  await asking.close()
  const killed = new Promise((resolve) => first.child.once("exit", resolve))
  first.child.kill("SIGKILL")
  await killed

  const second = await serve(logFile)
  const answering = await connectClient(second.url, { elicitation: { form: {} } })
  const retry = () =>
    answering.callTool(
      {
        name: "purge",
        arguments: { cache: "images" },
        inputResponses: { [id]: { action: "accept", content: { approved: true } } },
        requestState: parked.requestState,
      } as never,
      { allowInputRequired: true },
    )
  expect(await retry()).toMatchObject({ content: [{ text: "purged images" }], isError: false })
  expect(await retry()).toMatchObject({ content: [{ text: "purged images" }] })
  await answering.close()
  const purges = readFileSync(logFile, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line))
  expect(purges).toEqual([{ purged: "images", pid: second.child.pid }])
}, 60_000)
