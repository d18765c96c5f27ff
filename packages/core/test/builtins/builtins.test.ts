import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { type Server, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { ConfigError, type Tool, createToolkit, defineTool, pendingOf } from "../../src/index.js"
import { clientFor, useFakeServer } from "../helpers.js"

const roots: string[] = []
function scratch(): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-root-")))
  roots.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const names = (tools: Tool[]) => tools.map((t) => t.name)

describe("which builtins exist", () => {
  it("none unless builtins is given; false, disabled and enabled:false mean none", async () => {
    expect(names((await createToolkit()).tools())).toEqual([])
    for (const builtins of [
      false,
      { disabled: true },
      { enabled: false },
      { enabled: true, disabled: true },
    ]) {
      expect(names((await createToolkit({ builtins })).tools())).toEqual([])
    }
    const root = scratch()
    expect(
      names(
        (
          await createToolkit({ builtins: { root, tools: { bash: false, webfetch: false, nope: false } } })
        ).tools(),
      ),
    ).toEqual(["read", "write", "edit", "grep", "glob", "question", "apply_patch", "todowrite"])
  })

  it("a host tool shadows a builtin of its name, in the host's place", async () => {
    const bash = defineTool({
      name: "bash",
      description: "mine",
      inputSchema: { type: "object" },
      run: () => "host",
    })
    const toolkit = await createToolkit({ builtins: { root: scratch() }, extraTools: [bash] })
    expect(names(toolkit.tools()).slice(-1)).toEqual(["bash"])
    expect(toolkit.get("bash")?.description).toBe("mine")
    expect(names(toolkit.tools()).filter((n) => n === "bash")).toHaveLength(1)
  })

  it("refuses a bad root, output cap, policy or host list, naming the field", async () => {
    const file = path.join(scratch(), "f")
    writeFileSync(file, "")
    await expect(createToolkit({ builtins: { root: file } })).rejects.toThrow(
      `builtins.root is not an existing folder: ${file}`,
    )
    await expect(createToolkit({ builtins: { root: path.join(file, "x") } })).rejects.toBeInstanceOf(
      ConfigError,
    )
    await expect(createToolkit({ builtins: { maxOutputChars: 0 } })).rejects.toThrow(
      /builtins.maxOutputChars/,
    )
    await expect(createToolkit({ builtins: { requireApproval: "sometimes" as never } })).rejects.toThrow(
      /builtins.requireApproval/,
    )
    await expect(createToolkit({ builtins: { requireApproval: { builtin: 3 } as never } })).rejects.toThrow(
      /builtins.requireApproval.builtin/,
    )
    await expect(createToolkit({ builtins: { allowHosts: "x" as never } })).rejects.toThrow(
      /builtins.allowHosts/,
    )
    await expect(createToolkit({ builtins: "yes" as never })).rejects.toThrow(/builtins must be/)
  })
})

describe("root confinement, before any approval", () => {
  it("refuses .., absolute paths and symlinks out of the root at once, touching nothing", async () => {
    const outside = scratch()
    const root = scratch()
    writeFileSync(path.join(outside, "secret.txt"), "secret")
    symlinkSync(outside, path.join(root, "escape"))
    symlinkSync(path.join(outside, "new.txt"), path.join(root, "dangling"))
    mkdirSync(path.join(root, "inner"))
    // Every call would need approval: a refusal must come first, with no request.
    const toolkit = await createToolkit({ builtins: { root, requireApproval: true } })
    const cases: [string, Record<string, unknown>, string][] = [
      ["read", { path: "../secret.txt" }, "../secret.txt"],
      ["read", { path: path.join(outside, "secret.txt") }, path.join(outside, "secret.txt")],
      ["read", { path: "escape/secret.txt" }, "escape/secret.txt"],
      ["write", { path: "escape/new.txt", content: "x" }, "escape/new.txt"],
      ["write", { path: "dangling", content: "x" }, "dangling"],
      ["write", { path: "inner/../../x.txt", content: "x" }, "inner/../../x.txt"],
      ["edit", { path: "escape/secret.txt", oldString: "secret", newString: "gone" }, "escape/secret.txt"],
      ["grep", { pattern: "secret", path: "escape" }, "escape"],
      ["glob", { pattern: "*", path: ".." }, ".."],
      ["bash", { command: "touch pwned", workdir: "escape" }, "escape"],
      [
        "apply_patch",
        { patchText: "*** Begin Patch\n*** Add File: ../added.txt\n+x\n*** End Patch" },
        "../added.txt",
      ],
    ]
    for (const [tool, args, shown] of cases) {
      const result = await toolkit.execute(tool, args)
      expect({ tool, output: result.output, isError: result.isError, pending: pendingOf(result) }).toEqual({
        tool,
        output: `${tool}: path outside root: ${shown}`,
        isError: true,
        pending: undefined,
      })
    }
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret")
    expect(existsSync(path.join(outside, "new.txt"))).toBe(false)
    expect(existsSync(path.join(outside, "added.txt"))).toBe(false)
    expect(existsSync(path.join(outside, "pwned"))).toBe(false)
  })

  it("grep and glob search the root without following symlinks (one could lead out)", async () => {
    const outside = scratch()
    const root = scratch()
    writeFileSync(path.join(outside, "leak.txt"), "needle outside")
    writeFileSync(path.join(root, "own.txt"), "needle inside")
    symlinkSync(outside, path.join(root, "linked-dir"))
    symlinkSync(path.join(outside, "leak.txt"), path.join(root, "linked-file.txt"))
    const toolkit = await createToolkit({ builtins: { root, requireApproval: false } })
    const grep = await toolkit.execute("grep", { pattern: "needle" })
    expect(grep.isError).toBe(false)
    expect(grep.output).toContain("own.txt")
    expect(grep.output).not.toContain("outside")
    expect(grep.output).not.toContain("linked")
    const glob = await toolkit.execute("glob", { pattern: "**/*.txt" })
    expect(glob.output).toContain("own.txt")
    expect(glob.output).not.toContain("leak.txt")
    expect(glob.output).not.toContain("linked")
  })

  it("allows paths inside, through an inner symlink, and a new file in a new folder", async () => {
    const root = scratch()
    mkdirSync(path.join(root, "real"))
    symlinkSync(path.join(root, "real"), path.join(root, "alias"))
    const toolkit = await createToolkit({ builtins: { root, requireApproval: false } })
    expect((await toolkit.execute("write", { path: "alias/a/b.txt", content: "hi" })).output).toBe(
      "Wrote 2 bytes to alias/a/b.txt",
    )
    expect(readFileSync(path.join(root, "real/a/b.txt"), "utf8")).toBe("hi")
    expect((await toolkit.execute("read", { path: "./real/../real/a/b.txt" })).output).toBe("hi")
  })
})

describe("approval (§16, ApprovalPolicy with server builtin)", () => {
  it("by default suspends bash, write, edit and apply_patch first, and runs nothing before the answer", async () => {
    const root = scratch()
    writeFileSync(path.join(root, "f.txt"), "a")
    const toolkit = await createToolkit({ builtins: { root } })
    const calls: [string, Record<string, unknown>][] = [
      ["bash", { command: "touch ran" }],
      ["write", { path: "w.txt", content: "x" }],
      ["edit", { path: "f.txt", oldString: "a", newString: "b" }],
      ["apply_patch", { patchText: "*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch" }],
    ]
    for (const [tool, args] of calls) {
      const request = pendingOf(await toolkit.execute(tool, args))
      expect(request?.kind).toBe("approval")
      expect(request?.data).toEqual({ server: "builtin", tool, args })
      expect(request?.prompt).toBe(`Approve builtin tool ${tool} with ${JSON.stringify(args)}?`)
    }
    expect(["ran", "w.txt", "p.txt"].filter((f) => existsSync(path.join(root, f)))).toEqual([])
    expect(readFileSync(path.join(root, "f.txt"), "utf8")).toBe("a")
    // Reads need none.
    expect((await toolkit.execute("read", { path: "f.txt" })).output).toBe("a")
    // Answered ok, the call runs.
    const answer = { id: "pnd-1", ok: true }
    expect((await toolkit.execute("bash", { command: "touch ran && echo done" }, { answer })).output).toBe(
      "done\n",
    )
    expect(existsSync(path.join(root, "ran"))).toBe(true)
  })

  it("a declined approval runs nothing and says so; only an ok answer runs the call", async () => {
    const root = scratch()
    const toolkit = await createToolkit({ builtins: { root } })
    const args = { path: "f.txt", content: "x" }
    const asked = pendingOf(await toolkit.execute("write", args))
    expect(asked).toMatchObject({ kind: "approval", data: { server: "builtin", tool: "write", args } })
    expect(asked?.prompt).toBe(`Approve builtin tool write with ${JSON.stringify(args)}?`)
    const no = { id: "r1", ok: false, reason: "not today" }
    expect(await toolkit.execute("write", args, { answer: no })).toEqual({
      output: "declined: builtin tool write",
      isError: true,
    })
    expect(existsSync(path.join(root, "f.txt"))).toBe(false)
    const yes = await toolkit.execute("write", args, { answer: { id: "r1", ok: true } })
    expect(yes).toMatchObject({ output: "Wrote 1 bytes to f.txt", isError: false })
    expect(readFileSync(path.join(root, "f.txt"), "utf8")).toBe("x")
  })

  it("true asks for every builtin but question; a function and a record choose per call", async () => {
    const root = scratch()
    const all = await createToolkit({ builtins: { root, requireApproval: true } })
    expect(pendingOf(await all.execute("read", { path: "x" }))?.kind).toBe("approval")
    expect(pendingOf(await all.execute("todowrite", { todos: [] }))?.kind).toBe("approval")
    expect(pendingOf(await all.execute("question", { questions: [{ question: "Q?" }] }))?.kind).toBe(
      "question",
    )
    const seen: unknown[] = []
    const byFunction = await createToolkit({
      builtins: {
        root,
        requireApproval: (server, tool, args) => {
          seen.push([server, tool, args])
          return tool === "bash" && String(args.command).includes("rm")
        },
      },
    })
    expect(pendingOf(await byFunction.execute("bash", { command: "echo ok" }))).toBeUndefined()
    expect(pendingOf(await byFunction.execute("bash", { command: "rm -rf x" }))?.kind).toBe("approval")
    expect(seen).toEqual([
      ["builtin", "bash", { command: "echo ok" }],
      ["builtin", "bash", { command: "rm -rf x" }],
    ])
    const byRecord = await createToolkit({ builtins: { root, requireApproval: { builtin: ["read"] } } })
    expect(pendingOf(await byRecord.execute("read", { path: "x" }))?.kind).toBe("approval")
    expect(pendingOf(await byRecord.execute("write", { path: "x", content: "" }))).toBeUndefined()
  })
})

describe("webfetch", () => {
  let server: Server
  let base: string
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/missing") return res.writeHead(404).end("nope")
      res.writeHead(200, { "content-type": "text/html" })
      res.end("<html><style>p{}</style><script>x()</script><p>Hello  \n\n\n\n<b>world</b></p></html>")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it("fetches allowed hosts without approval and asks for any other", async () => {
    const root = scratch()
    const allowed = await createToolkit({ builtins: { root, allowHosts: ["127.0.0.1"] } })
    expect(await allowed.execute("webfetch", { url: `${base}/page` })).toEqual({
      output: "Hello\n\nworld",
      isError: false,
      metadata: { status: 200, format: "markdown" },
    })
    expect((await allowed.execute("webfetch", { url: `${base}/page`, format: "html" })).output).toContain(
      "<script>",
    )
    expect(await allowed.execute("webfetch", { url: `${base}/missing` })).toEqual({
      output: "HTTP 404",
      isError: true,
      metadata: { status: 404 },
    })
    const guarded = await createToolkit({ builtins: { root, allowHosts: ["*.example.test"] } })
    expect(pendingOf(await guarded.execute("webfetch", { url: `${base}/page` }))?.data).toEqual({
      server: "builtin",
      tool: "webfetch",
      args: { url: `${base}/page` },
    })
  })
})

describe("webfetch through the client's fetch seam", () => {
  const fake = useFakeServer()

  it("sends its GET through the client's `fetch`, as the model's requests go, not the global fetch", async () => {
    const seen: { url: string; method: string }[] = []
    // The seam forwards the LLM's requests and answers the page itself: the page's host
    // does not resolve, so only the seam can have fetched it.
    const seam: typeof fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input)
      seen.push({ url, method: init?.method ?? "GET" })
      if (url.startsWith("https://docs.invalid/"))
        return new Response("<p>from the <b>seam</b></p>", {
          status: 200,
          headers: { "content-type": "text/html" },
        })
      return fetch(input, init)
    }
    const toolkit = await createToolkit({ builtins: { root: scratch(), allowHosts: ["docs.invalid"] } })
    fake.server.enqueue(
      { toolCalls: [{ name: "webfetch", arguments: { url: "https://docs.invalid/page" } }] },
      { text: "read it" },
    )
    const client = clientFor("openai", fake.server, { fetch: seam })
    const result = await client.run("read the docs", { toolkit })
    expect(result.status).toBe("done")
    expect(fake.server.requests[1]?.toolResults.map((r) => r.content)).toEqual(["from the seam"])
    expect(seen.map((s) => `${s.method} ${new URL(s.url).pathname}`)).toEqual([
      "POST /v1/chat/completions",
      "GET /page",
      "POST /v1/chat/completions",
    ])
  })

  it("without a seam (a toolkit called directly) uses the global fetch; a host that does not resolve is an isError result", async () => {
    const toolkit = await createToolkit({ builtins: { root: scratch(), allowHosts: ["docs.invalid"] } })
    const result = await toolkit.execute("webfetch", { url: "https://docs.invalid/page", timeout: 5 })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/^webfetch: /)
  })
})

describe("bash", () => {
  it("a timeout kills the whole process group and keeps the output so far", async () => {
    const root = scratch()
    const toolkit = await createToolkit({ builtins: { root, requireApproval: false } })
    // The shell starts a grandchild that would outlive a kill of the shell alone.
    const result = await toolkit.execute("bash", {
      command: "sleep 30 & echo $! > child.pid; echo started; wait",
      timeout: 300,
    })
    expect(result.isError).toBe(true)
    expect(result.output).toBe("bash: command timed out after 300ms\nstarted\n")
    expect(result.metadata).toEqual({ timedOut: true })
    const pid = Number(readFileSync(path.join(root, "child.pid"), "utf8"))
    // Gone, or a zombie left for a parent that does not reap (a container's PID 1): not running.
    const running = () => {
      try {
        return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
      } catch {
        return false
      }
    }
    let alive = running()
    for (let i = 0; i < 50 && alive; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      alive = running()
    }
    expect(alive).toBe(false)
  })

  it("cuts output past maxOutputChars with a note and metadata.truncated", async () => {
    const toolkit = await createToolkit({
      builtins: { root: scratch(), requireApproval: false, maxOutputChars: 50 },
    })
    const result = await toolkit.execute("bash", { command: "yes x | head -c 100000" })
    expect(result.output).toBe(`${"x\n".repeat(25)}\n[output truncated: 1 more characters]`)
    expect(result.metadata).toEqual({ exitCode: 0, truncated: true })
    const read = await toolkit.execute("write", { path: "big.txt", content: "y".repeat(80) })
    expect(read.isError).toBe(false)
    expect((await toolkit.execute("read", { path: "big.txt" })).output).toBe(
      `${"y".repeat(50)}\n[output truncated: 30 more characters]`,
    )
    await toolkit.execute("write", { path: "many.txt", content: "match\n".repeat(40) })
    const grep = await toolkit.execute("grep", { pattern: "match" })
    expect(grep.output).toMatch(/\n\[output truncated: \d+ more characters\]$/)
    expect(grep.output.indexOf("\n[output truncated")).toBe(50)
    expect(grep.metadata?.truncated).toBe(true)
    // write's own text is never cut.
    const long = `${"d/".repeat(30)}f.txt`
    expect((await toolkit.execute("write", { path: long, content: "z" })).output).toBe(
      `Wrote 1 bytes to ${long}`,
    )
  })
})

describe("question in a run", () => {
  const fake = useFakeServer()

  it("asks every question on its own line, options listed, and never for approval", async () => {
    const toolkit = await createToolkit({ builtins: { root: scratch(), requireApproval: true } })
    const questions = [{ question: "Which env?", options: ["staging", "prod"] }, { question: "Why?" }]
    const asked = pendingOf(await toolkit.execute("question", { questions }))
    expect(asked).toMatchObject({
      kind: "question",
      prompt: "Which env? (options: staging, prod)\nWhy?",
      data: { questions },
    })
    // Answered without data ⇒ an empty object.
    expect((await toolkit.execute("question", { questions }, { answer: { id: "q", ok: true } })).output).toBe(
      "{}",
    )
  })

  it("halts as kind question and returns the answer's data when continued", async () => {
    const toolkit = await createToolkit({ builtins: { root: scratch() } })
    const questions = [{ question: "Which env?", options: ["staging", "prod"] }]
    fake.server.enqueue(
      { toolCalls: [{ name: "question", arguments: { questions } }] },
      { text: "going to staging" },
    )
    const client = clientFor("openai", fake.server)
    const halted = await client.run("deploy", { toolkit })
    expect(halted.status).toBe("pending")
    expect(halted.pending?.kind).toBe("question")
    expect(halted.pending?.prompt).toBe("Which env? (options: staging, prod)")
    expect(halted.pending?.data?.questions).toEqual(questions)
    const pending = halted.pending as NonNullable<typeof halted.pending>
    const done = await client.continueRun({
      toolkit,
      messages: halted.messages,
      pending,
      answer: { id: pending.id, ok: true, data: { env: "staging" } },
    })
    expect(done.status).toBe("done")
    expect(fake.server.requests[1]?.toolResults.map((r) => r.content)).toEqual(['{"env":"staging"}'])
  })
})
