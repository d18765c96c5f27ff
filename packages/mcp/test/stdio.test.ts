import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Request, createToolkit } from "@toolnexus/core"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { type McpConnection, McpHandshakeTimeoutError, connectMcp } from "../src/index.js"
import { EVERYTHING, FILESYSTEM, TEST_SERVER, UNDER_LOAD, alive } from "./paths.js"
import { answerHalted, scriptedClient } from "./scripted-model.js"

const node = process.execPath

describe("real servers as stdio children", () => {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), "tnx-mcp-fs-")))
  let mcp: McpConnection

  beforeAll(async () => {
    mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: {
        everything: { command: node, args: [EVERYTHING] },
        files: { command: node, args: [FILESYSTEM, folder] },
      },
    })
  })
  afterAll(() => mcp?.close())

  it("reports both servers ready and offers their tools as <server>__<tool>", () => {
    expect(mcp.servers()).toEqual([
      { name: "everything", status: "ready", tools: expect.any(Number), pid: expect.any(Number) },
      { name: "files", status: "ready", tools: expect.any(Number), pid: expect.any(Number) },
    ])
    const names = mcp.tools().map((t) => t.name)
    expect(names).toContain("everything__echo")
    expect(names).toContain("files__write_file")
    for (const tool of mcp.tools()) {
      expect(tool.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/)
      expect(tool.source).toBe("mcp")
      expect(tool.inputSchema.type).toBe("object")
    }
    expect(new Set(names).size).toBe(names.length)
    const echo = mcp.tools().find((t) => t.name === "everything__echo")
    expect(echo?.description).toMatch(/echo/i)
    expect(echo?.inputSchema).toMatchObject({
      properties: { message: { type: "string" } },
      required: ["message"],
    })
  })

  it("runs tools: text becomes output, images are summarised without their bytes", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    expect(await toolkit.execute("everything__echo", { message: "hello" })).toMatchObject({
      output: "Echo: hello",
      isError: false,
    })
    const image = await toolkit.execute("everything__get-tiny-image", {})
    expect(image.isError).toBe(false)
    expect(image.metadata?.content).toEqual([
      { type: "image", mimeType: "image/png", bytes: expect.any(Number) },
    ])
    expect(JSON.stringify(image)).not.toMatch(/iVBOR/) // no base64 PNG anywhere
  })

  it("writes and reads through the filesystem server; a refused path is an isError result", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const written = await toolkit.execute("files__write_file", {
      path: join(folder, "a.txt"),
      content: "one",
    })
    expect(written.isError).toBe(false)
    expect(readFileSync(join(folder, "a.txt"), "utf8")).toBe("one")
    const read = await toolkit.execute("files__read_text_file", { path: join(folder, "a.txt") })
    expect(read.output).toBe("one")
    const outside = await toolkit.execute("files__read_text_file", { path: "/etc/hostname" })
    expect(outside.isError).toBe(true)
    expect(outside.output).toMatch(/denied|outside/i)
  })

  it('"destructive" follows the server\'s annotations: writes ask first, reads do not', async () => {
    const guarded = await connectMcp({
      ...UNDER_LOAD,
      servers: { files: { command: node, args: [FILESYSTEM, folder] } },
      requireApproval: "destructive",
    })
    try {
      const toolkit = await createToolkit({ extraTools: guarded.tools() })
      const target = join(folder, "guarded.txt")
      const write = await toolkit.execute("files__write_file", { path: target, content: "x" })
      expect(write.metadata?.pending).toMatchObject({
        kind: "approval",
        data: {
          server: "files",
          tool: "write_file",
          args: { path: target, content: "x" },
          annotations: { readOnlyHint: false, destructiveHint: true },
        },
      })
      expect(existsSync(target)).toBe(false)
      expect((await toolkit.execute("files__list_allowed_directories", {})).isError).toBe(false)
      // create_directory says destructiveHint: false, so it runs without asking.
      expect((await toolkit.execute("files__create_directory", { path: join(folder, "sub") })).isError).toBe(
        false,
      )
    } finally {
      await guarded.close()
    }
  })

  it("answers a real server's elicitation inline through the client's waitFor", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const asked: string[] = []
    const client = scriptedClient([{ name: "everything__trigger-elicitation-request", arguments: {} }], {
      waitFor: async (req) => {
        asked.push(req.kind)
        return { id: req.id, ok: false, reason: "declined" }
      },
    })
    const result = await client.run("try the form", { toolkit })
    expect(asked).toEqual(["input"])
    expect(result.toolCalls[0]?.output).toMatch(/declin/i)
  })

  it("a real server's elicitation with nobody to answer halts; the re-issued call takes the stored answer", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const client = scriptedClient([{ name: "everything__trigger-elicitation-request", arguments: {} }])
    const halted = await client.run("try the form", { toolkit })
    expect(halted.status).toBe("pending")
    const request = halted.pending as Request
    expect(request).toMatchObject({
      kind: "input",
      data: { server: "everything", tool: "trigger-elicitation-request" },
    })
    expect((request.data?.schema as { required?: string[] } | undefined)?.required).toEqual(["name"])
    const resumed = await answerHalted(client, toolkit, halted, {
      name: "Ada Lovelace",
      email: "ada@example.com",
    })
    expect(resumed.status).toBe("done")
    expect(resumed.text).toMatch(/Name: Ada Lovelace/)
  })

  it("a real server's URL elicitation, by request or by error -32042, becomes an authorization request", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const asked: Request[] = []
    const inline = scriptedClient(
      [{ name: "everything__trigger-url-elicitation", arguments: { url: "https://example.test/flow" } }],
      {
        waitFor: async (req) => {
          asked.push(req)
          return { id: req.id, ok: true }
        },
      },
    )
    expect((await inline.run("go", { toolkit })).text).toMatch(/User completed the URL elicitation flow/)
    expect(asked[0]).toMatchObject({ kind: "authorization", url: "https://example.test/flow" })

    const args = { url: "https://example.test/flow", errorPath: true }
    const durable = scriptedClient([{ name: "everything__trigger-url-elicitation", arguments: args }])
    const halted = await durable.run("go", { toolkit })
    expect(halted.pending).toMatchObject({
      kind: "authorization",
      url: "https://modelcontextprotocol.io",
      prompt: "Open this link to satisfy the prerequisite, then retry the request.",
      data: { server: "everything", tool: "trigger-url-elicitation" },
    })
    const resumed = await answerHalted(durable, toolkit, halted)
    // The retried call proceeds to the request path, whose elicitation now has nobody to answer it.
    expect(resumed.pending).toMatchObject({ kind: "authorization", url: "https://example.test/flow" })
  })

  it("an answer that breaks a real server's form (a bad email) is refused, naming the field", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const client = scriptedClient([{ name: "everything__trigger-elicitation-request", arguments: {} }], {
      waitFor: async (req) => ({ id: req.id, ok: true, data: { name: "Ada", email: "not-an-email" } }),
    })
    const result = await client.run("try the form", { toolkit })
    expect(result.toolCalls[0]?.isError).toBe(true)
    expect(result.toolCalls[0]?.output).toMatch(/does not fit the form: .*email/)
  })
})

describe("child processes", () => {
  it("passes env (its values redacted from results) and cwd; close() ends every child (no orphan)", async () => {
    const cwd = realpathSync(tmpdir())
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: {
        a: { command: node, args: [TEST_SERVER, "stdio"], env: { TEST_VALUE: "v-42" }, cwd },
        b: { command: node, args: [EVERYTHING] },
      },
    })
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    expect((await toolkit.execute("a__env", {})).output).toBe(`TEST_VALUE=*** reversed=24-v cwd=${cwd}`)
    const pids = pidsOf(mcp)
    expect(pids).toHaveLength(2)
    for (const pid of pids) expect(alive(pid)).toBe(true)
    await mcp.close()
    for (const pid of pids) expect(alive(pid)).toBe(false)
  })

  it("a server that dies mid-call gives an isError result naming it; the next call reconnects", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { flaky: { command: node, args: [TEST_SERVER, "stdio"] } },
    })
    try {
      const toolkit = await createToolkit({ extraTools: mcp.tools() })
      const first = pidsOf(mcp)[0] as number
      const died = await toolkit.execute("flaky__die", {})
      expect(died.isError).toBe(true)
      expect(died.output).toMatch(
        /^MCP server "flaky" went away during the call to die \(.+\); the next call reconnects$/,
      )
      expect(mcp.servers()[0]).toMatchObject({ status: "failed", code: "TNX_MCP_CONNECT" })
      // No backoff after a death: the very next call reconnects.
      expect((await toolkit.execute("flaky__ping", {})).output).toBe("pong")
      expect(mcp.servers()[0]?.status).toBe("ready")
      expect(pidsOf(mcp)[0]).not.toBe(first)
      expect(alive(first)).toBe(false)
    } finally {
      await mcp.close()
    }
  })

  it("the run's signal cancels a call; the server stays usable", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { t: { command: node, args: [TEST_SERVER, "stdio"] } },
    })
    try {
      const toolkit = await createToolkit({ extraTools: mcp.tools() })
      const started = Date.now()
      const aborted = await toolkit.execute("t__sleep", { ms: 10_000 }, { signal: AbortSignal.timeout(100) })
      expect(aborted).toMatchObject({ isError: true, output: "the call to sleep was aborted" })
      expect(Date.now() - started).toBeLessThan(5_000)
      expect((await toolkit.execute("t__ping", {})).output).toBe("pong")
    } finally {
      await mcp.close()
    }
  })

  it("close() during a call ends the call and the child", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { t: { command: node, args: [TEST_SERVER, "stdio"] } },
    })
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const [pid] = pidsOf(mcp)
    const started = join(mkdtempSync(join(tmpdir(), "tnx-mcp-call-")), "started")
    const call = toolkit.execute("t__sleep", { ms: 30_000, started })
    await vi.waitFor(() => expect(existsSync(started)).toBe(true), { timeout: 20_000 })
    await mcp.close()
    expect((await call).isError).toBe(true)
    expect(alive(pid as number)).toBe(false)
    expect((await toolkit.execute("t__ping", {})).output).toBe('MCP server "t" is closed')
  })

  it("a server killed between calls: the first call after reconnects at once to a new process", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { killed: { command: node, args: [TEST_SERVER, "stdio"] } },
    })
    try {
      const toolkit = await createToolkit({ extraTools: mcp.tools() })
      expect((await toolkit.execute("killed__ping", {})).output).toBe("pong")
      const first = pidsOf(mcp)[0] as number
      process.kill(first, "SIGKILL")
      await vi.waitFor(() => expect(mcp.servers()[0]?.status).toBe("failed"))
      const after = await toolkit.execute("killed__ping", {})
      expect(after).toMatchObject({ isError: false, output: "pong" })
      expect(mcp.servers()[0]?.status).toBe("ready")
      expect(pidsOf(mcp)[0]).not.toBe(first)
    } finally {
      await mcp.close()
    }
  })

  it("backoff only between failed attempts: a call in the window fails fast, saying when the next is", async () => {
    // Starts once; every later start fails (the marker file exists), as a broken redeploy would.
    const marker = join(mkdtempSync(join(tmpdir(), "tnx-mcp-once-")), "started")
    const script = `[ -e "$1" ] && { echo broken >&2; exit 1; }; : > "$1"; exec "$2" "$3" stdio`
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { flaky: { command: "sh", args: ["-c", script, "sh", marker, node, TEST_SERVER] } },
    })
    try {
      const toolkit = await createToolkit({ extraTools: mcp.tools() })
      expect((await toolkit.execute("flaky__ping", {})).output).toBe("pong")
      await toolkit.execute("flaky__die", {})
      // The first call after the death tries at once; the start fails, which starts the backoff.
      const attempt = await toolkit.execute("flaky__ping", {})
      expect(attempt.isError).toBe(true)
      expect(attempt.output).toMatch(/^MCP server "flaky" is unavailable \(.*broken.*\)$/)
      const fast = await toolkit.execute("flaky__ping", {})
      expect(fast.isError).toBe(true)
      expect(fast.output).toMatch(/MCP server "flaky" is unavailable .*next reconnect attempt is in 1 s$/)
    } finally {
      await mcp.close()
    }
  })

  it("a reconnect that takes longer than callTimeoutMs ends the call at its limit", async () => {
    // Starts once; a later start hangs before it speaks MCP (5 s: far past the call's 300 ms,
    // and close() waits for that start to end).
    const marker = join(mkdtempSync(join(tmpdir(), "tnx-mcp-slow-")), "started")
    const script = `[ -e "$1" ] && exec sleep 5; : > "$1"; exec "$2" "$3" stdio`
    // UNDER_LOAD: the first start may take over the default 10 s on a loaded machine (the test
    // then found no tools at all); the reconnect is bounded by the call's 300 ms either way.
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { slow: { command: "sh", args: ["-c", script, "sh", marker, node, TEST_SERVER] } },
      callTimeoutMs: 300,
    })
    try {
      const toolkit = await createToolkit({ extraTools: mcp.tools() })
      await toolkit.execute("slow__die", {})
      // Under load the die call can reach its 300 ms limit before the child has exited; the
      // ping must not find that first child still serving, so wait until its session is gone.
      await vi.waitFor(() => expect(mcp.servers()[0]?.status).not.toBe("ready"), { timeout: 20_000 })
      const result = await toolkit.execute("slow__ping", {})
      expect(result).toMatchObject({
        isError: true,
        output: 'MCP server "slow" did not reconnect within 300 ms',
      })
    } finally {
      await mcp.close()
    }
  })

  it("a command that does not exist fails that server only, with a typed code", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: {
        missing: { command: "/nonexistent/mcp-server-binary" },
        ok: { command: node, args: [TEST_SERVER, "stdio"] },
      },
    })
    try {
      const [missing, ok] = mcp.servers()
      expect(missing).toMatchObject({ name: "missing", status: "failed", tools: 0, code: "TNX_MCP_CONNECT" })
      expect(missing?.error).toMatch(/MCP server "missing"/)
      expect(ok?.status).toBe("ready")
      expect(mcp.tools().every((t) => t.name.startsWith("ok__"))).toBe(true)
    } finally {
      await mcp.close()
    }
  })

  it("a handshake that never answers times out with a typed error, and the child is ended", async () => {
    const marker = `tnx-silent-${process.pid}-${Date.now()}`
    const silent = { command: node, args: ["-e", "setInterval(() => {}, 1000)", marker] }
    const started = Date.now()
    const mcp = await connectMcp({ ...UNDER_LOAD, servers: { silent }, connectTimeoutMs: 300 })
    try {
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(mcp.servers()[0]).toMatchObject({
        status: "failed",
        code: new McpHandshakeTimeoutError("s", 1).code,
      })
      expect(mcp.servers()[0]?.error).toMatch(/did not answer the initialize handshake within 300 ms/)
      expect(pidsOf(mcp)).toEqual([])
      expect(execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })).not.toContain(marker)
    } finally {
      await mcp.close()
    }
  })
})

describe("schemas and outputs that need care", () => {
  let mcp: McpConnection
  beforeAll(async () => {
    mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { t: { command: node, args: [TEST_SERVER, "stdio"] } },
      maxOutputChars: 1_000,
    })
  })
  afterAll(() => mcp?.close())

  it("a non-object schema is offered as the property input, which the server receives", async () => {
    const shout = mcp.tools().find((t) => t.name === "t__shout")
    expect(shout?.inputSchema).toEqual({
      type: "object",
      properties: { input: { type: "string" } },
      required: ["input"],
      additionalProperties: false,
    })
    expect((await shout?.execute({ input: "hey" }))?.output).toBe("HEY")
    const sum = mcp.tools().find((t) => t.name === "t__sum-list")
    expect((await sum?.execute({ input: [1, 2, 3] }))?.output).toBe("6")
  })

  it("a missing schema means no arguments; an object schema without properties gets them", () => {
    expect(mcp.tools().find((t) => t.name === "t__no-schema")?.inputSchema).toEqual({
      type: "object",
      properties: {},
    })
    expect(mcp.tools().find((t) => t.name === "t__env")?.inputSchema).toEqual({
      type: "object",
      properties: {},
    })
  })

  it("a huge output is cut to maxOutputChars, saying so", async () => {
    const huge = await mcp
      .tools()
      .find((t) => t.name === "t__huge")
      ?.execute({ chars: 2_000_000 })
    expect(huge?.isError).toBe(false)
    expect(huge?.output.length).toBeLessThan(1_200)
    expect(huge?.output).toMatch(/\[output truncated: 1999000 of 2000000 characters omitted\]$/)
    expect(huge?.metadata?.truncated).toEqual({ chars: 2_000_000, kept: 1_000 })
  })
})

function pidsOf(mcp: McpConnection): number[] {
  return mcp.servers().flatMap((s) => (s.pid === undefined ? [] : [s.pid]))
}
