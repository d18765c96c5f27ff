import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import { afterEach, expect, it } from "vitest"

// Every check drives the built app (dist/main.js) in its own processes, as an MCP host would.
const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url))
// The Inspector CLI reads its package.json relative to the working directory: run it from its build folder.
const INSPECTOR = createRequire(import.meta.url).resolve("@modelcontextprotocol/inspector-cli/build/index.js")
const TOKENS = "alice=alice-token-0123456789,bob=bob-token-0123456789"
const dirs: string[] = []
const children: ChildProcess[] = []
const clients: Client[] = []

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined)
  for (const child of children.splice(0)) child.kill("SIGKILL")
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tnx-mcp-agent-"))
  dirs.push(dir)
  return dir
}

function envOf(data: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_AGENT_DATA: data, PORT: "0", ...extra }
  for (const key of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MCP_AGENT_STATE_KEY", "MCP_AGENT_TOKENS"])
    if (!(key in extra)) delete env[key]
  return env
}

/** `main.js serve` on a free port; resolves with its URL once it listens. */
function serve(
  data: string,
  extra: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [MAIN, "serve"], {
    env: envOf(data, extra),
    stdio: ["ignore", "pipe", "pipe"],
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    let out = ""
    let err = ""
    child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()))
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const line = out.split("\n")[0]
      if (out.includes("\n") && line) resolve({ url: line, child })
    })
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${err}`)))
  })
}

/** Runs a command to its end. */
function run(
  args: string[],
  opts: { env: NodeJS.ProcessEnv; cwd?: string },
): Promise<{ code: number | null; out: string; err: string; pid: number | undefined }> {
  const child = spawn(process.execPath, args, { ...opts, stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  let out = ""
  let err = ""
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()))
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, out, err, pid: child.pid })))
}

function inspector(data: string, target: string[], args: string[]) {
  return run([INSPECTOR, ...target, ...args], { env: envOf(data), cwd: dirname(INSPECTOR) })
}

function releases(data: string): { service: string; version: string; pid: number }[] {
  const log = join(data, "releases.jsonl")
  if (!existsSync(log)) return []
  return readFileSync(log, "utf8")
    .trim()
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line))
}

/** The v2 SDK's own client at 2026-07-28, declaring form elicitation, answering input_required itself. */
async function sdkClient(url: string, token: string): Promise<Client> {
  const client = new Client(
    { name: "mcp-agent-test", version: "1.0.0" },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      inputRequired: { autoFulfill: false },
    },
  )
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  )
  clients.push(client)
  return client
}

type InputRequired = {
  resultType: string
  inputRequests: Record<string, { params: { message: string } }>
  requestState: string
}

it("the v2 SDK client approves a sub-agent's request after the serving process was SIGKILLed and replaced; the tool runs once; tampered and cross-principal states are refused", async () => {
  const data = dataDir()
  const tokens = { MCP_AGENT_TOKENS: TOKENS }
  const first = await serve(data, tokens)
  const asking = await sdkClient(first.url, "alice-token-0123456789")
  const call = { name: "ops", arguments: { prompt: "ship checkout 1.4.2" } }
  const parked = (await asking.callTool(call, { allowInputRequired: true })) as unknown as InputRequired
  expect(parked.resultType).toBe("input_required")
  const [id, request] = Object.entries(parked.inputRequests)[0] ?? []
  expect(request?.params.message).toBe("Ship checkout 1.4.2 to production?")
  expect(releases(data)).toEqual([])
  const killed = new Promise((resolve) => first.child.once("exit", resolve))
  first.child.kill("SIGKILL")
  await killed

  const second = await serve(data, tokens)
  const retry = (client: Client, requestState: string) =>
    client.callTool(
      {
        ...call,
        inputResponses: { [id as string]: { action: "accept", content: { approved: true } } },
        requestState,
      } as never,
      { allowInputRequired: true },
    )
  const at = parked.requestState.length - 4
  const tampered = `${parked.requestState.slice(0, at)}${parked.requestState[at] === "A" ? "B" : "A"}${parked.requestState.slice(at + 1)}`
  const alice = await sdkClient(second.url, "alice-token-0123456789")
  await expect(retry(alice, tampered)).rejects.toMatchObject({ code: -32602 })
  const bob = await sdkClient(second.url, "bob-token-0123456789")
  await expect(retry(bob, parked.requestState)).rejects.toMatchObject({ code: -32602 })
  expect(releases(data)).toEqual([])

  expect(await retry(alice, parked.requestState)).toMatchObject({
    content: [{ type: "text", text: "shipped checkout 1.4.2" }],
    isError: false,
  })
  // The response was lost and the host retries: the run's state again, nothing decided twice.
  expect(await retry(alice, parked.requestState)).toMatchObject({
    content: [{ text: "shipped checkout 1.4.2" }],
  })
  expect(releases(data)).toEqual([{ service: "checkout", version: "1.4.2", pid: second.child.pid }])
}, 120_000)

it("the MCP Inspector CLI lists the tools over HTTP and stdio; told the open request's id, a second process answers it once", async () => {
  const data = dataDir()
  const { url } = await serve(data)
  // The two listings are independent processes (one over HTTP, one spawning the stdio server):
  // side by side, as the CLI's start is most of their time.
  const [listed, overStdio] = await Promise.all([
    inspector(data, [url], ["--method", "tools/list"]),
    inspector(data, [process.execPath, MAIN, "stdio"], ["--method", "tools/list"]),
  ])
  expect(listed.code).toBe(0)
  expect(JSON.parse(listed.out).tools.map((t: { name: string }) => t.name)).toEqual(["ops", "ship_release"])
  expect(overStdio.code).toBe(0)
  expect(JSON.parse(overStdio.out).tools.map((t: { name: string }) => t.name)).toEqual([
    "ops",
    "ship_release",
  ])

  // The Inspector declares no elicitation: the call is an error result naming the open request.
  const called = await inspector(
    data,
    [url],
    [
      "--method",
      "tools/call",
      "--tool-name",
      "ship_release",
      "--tool-arg",
      "service=billing",
      "version=2.0.0",
    ],
  )
  const result = JSON.parse(called.out) as { content: { text: string }[]; isError: boolean }
  expect(result.isError).toBe(true)
  const id = /\b(pnd-[\w-]+)/.exec(result.content[0]?.text ?? "")?.[1] as string
  expect(result.content[0]?.text).toContain("Ship billing 2.0.0 to production?")
  expect(releases(data)).toEqual([])

  const pending = await run([MAIN, "pending"], { env: envOf(data) })
  expect(pending.out).toContain(id)
  const answered = await run([MAIN, "answer", id, "approve"], { env: envOf(data) })
  expect(answered.out).toContain("done: shipped billing 2.0.0")
  const again = await run([MAIN, "answer", id, "decline"], { env: envOf(data) })
  expect(again.code).toBe(1)
  expect(again.err).toContain("already applied")
  expect(releases(data)).toEqual([{ service: "billing", version: "2.0.0", pid: answered.pid }])
}, 120_000)

it("an expired requestState is refused with nothing delivered; the request stays open for another door", async () => {
  const data = dataDir()
  // A state good for 1 ms is expired by the time the retry arrives.
  const { url } = await serve(data, { MCP_AGENT_TOKENS: TOKENS, MCP_AGENT_STATE_TTL_MS: "1" })
  const alice = await sdkClient(url, "alice-token-0123456789")
  const call = { name: "ship_release", arguments: { service: "search", version: "3.1.0" } }
  const parked = (await alice.callTool(call, { allowInputRequired: true })) as unknown as InputRequired
  const id = Object.keys(parked.inputRequests)[0] as string
  await expect(
    alice.callTool(
      {
        ...call,
        inputResponses: { [id]: { action: "accept", content: { approved: true } } },
        requestState: parked.requestState,
      } as never,
      { allowInputRequired: true },
    ),
  ).rejects.toMatchObject({ code: -32602 })
  expect(releases(data)).toEqual([])
  expect((await run([MAIN, "pending"], { env: envOf(data) })).out).toContain(id)
}, 120_000)

it("the same request answered from a second process and in the host: the first answer decides, the host's retry gets that outcome", async () => {
  const data = dataDir()
  const { url } = await serve(data, { MCP_AGENT_TOKENS: TOKENS })
  const alice = await sdkClient(url, "alice-token-0123456789")
  const call = { name: "ops", arguments: { prompt: "ship search 3.2.0" } }
  const parked = (await alice.callTool(call, { allowInputRequired: true })) as unknown as InputRequired
  const id = Object.keys(parked.inputRequests)[0] as string
  const declined = await run([MAIN, "answer", id, "decline", "freeze week"], { env: envOf(data) })
  expect(declined.code).toBe(0)
  const late = (await alice.callTool(
    {
      ...call,
      inputResponses: { [id]: { action: "accept", content: { approved: true } } },
      requestState: parked.requestState,
    } as never,
    { allowInputRequired: true },
  )) as { content: { text: string }[] }
  expect(late.content[0]?.text).toContain("freeze week")
  expect(releases(data)).toEqual([])
}, 120_000)

it("over stdio, as Claude Desktop spawns it: the host answers the sub-agent's approval form (2025-11-25 and 2026-07-28); the release runs once per call", async () => {
  const data = dataDir()
  const asked: string[] = []
  for (const era of ["legacy", "modern"] as const) {
    const client = new Client(
      { name: "desktop-like-host", version: "1.0.0" },
      {
        capabilities: { elicitation: { form: {} } },
        ...(era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
      },
    )
    // The host's form: the user ticks Approve.
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(String(request.params.message))
      return { action: "accept", content: { approved: true } }
    })
    const env = envOf(data)
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, "stdio"],
        env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
        stderr: "ignore",
      }),
    )
    clients.push(client)
    const version = era === "legacy" ? "1.0.0" : "2.0.0"
    expect(
      await client.callTool({ name: "ops", arguments: { prompt: `ship stdio ${version}` } }),
    ).toMatchObject({
      content: [{ text: `shipped stdio ${version}` }],
    })
  }
  expect(asked).toEqual(["Ship stdio 1.0.0 to production?", "Ship stdio 2.0.0 to production?"])
  expect(releases(data).map((r) => r.version)).toEqual(["1.0.0", "2.0.0"])
}, 120_000)
