import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { ConfigError, type Tool, createToolkit, defineTool, listSkills, pending } from "../../src/index.js"
import { STYLES, clientFor, useFakeServer } from "../helpers.js"

const tool = (name: string, output = name): Tool =>
  defineTool({ name, description: `the ${name} tool`, inputSchema: { type: "object" }, run: () => output })

const dirs: string[] = []
function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "tnx-skills-"))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function skill(dir: string, folder: string, frontmatter: string, body = "Body.") {
  mkdirSync(path.join(dir, folder), { recursive: true })
  writeFileSync(path.join(dir, folder, "SKILL.md"), `---\n${frontmatter}\n---\n${body}\n`)
}

describe("toolkit assembly (§16)", () => {
  it("orders MCP, skill, builtins, agents, extraTools and closes the tool sets", async () => {
    let closed = 0
    const set = { tools: () => [tool("files__read")], close: async () => void closed++ }
    const toolkit = await createToolkit({
      extraTools: [tool("extra")],
      agents: [tool("remote"), { asTool: () => tool("helper") }],
      mcp: [set, { tools: () => [tool("git__log")] }],
      skills: [{ name: "s", content: "c" }],
      builtins: { root: scratch(), tools: { bash: false, webfetch: false, todowrite: false } },
    })
    expect(toolkit.tools().map((t) => t.name)).toEqual([
      "files__read",
      "git__log",
      "skill",
      ...["read", "write", "edit", "grep", "glob", "question", "apply_patch"],
      "remote",
      "helper",
      "extra",
    ])
    // (The stand-in MCP and agent tools are plain defineTool tools.)
    expect(toolkit.tools().map((t) => t.source)).toEqual([
      "native",
      "native",
      "skill",
      ...Array(7).fill("builtin"),
      "native",
      "native",
      "native",
    ])
    await toolkit.close()
    expect(closed).toBe(1)
  })

  it("refuses any duplicate across sources with a ConfigError naming it", async () => {
    await expect(
      createToolkit({ mcp: { tools: () => [tool("x")] }, extraTools: [tool("x")] }),
    ).rejects.toThrow(/duplicate tool name "x"/)
    await expect(createToolkit({ agents: [tool("y")], extraTools: [tool("y")] })).rejects.toBeInstanceOf(
      ConfigError,
    )
    await expect(createToolkit({ skills: [], extraTools: [tool("skill")] })).rejects.toThrow(/"skill"/)
  })

  it("drops disabled names from every source, skill included, ignoring unknown names", async () => {
    const toolkit = await createToolkit({
      mcp: { tools: () => [tool("a"), tool("b")] },
      skills: [{ name: "s", content: "c" }],
      agents: [tool("c")],
      extraTools: [tool("d")],
      builtins: { root: scratch(), tools: { write: false, edit: false, grep: false, glob: false } },
      disableTools: ["a", "skill", "c", "nope", "bash", "webfetch", "question", "apply_patch", "todowrite"],
    })
    expect(toolkit.tools().map((t) => t.name)).toEqual(["b", "read", "d"])
    // The catalog text does not depend on the tool being exposed.
    expect(toolkit.skillsPrompt()).toBe("No skills are currently available.")
  })

  it("refuses a malformed source, a bad waitFor, a bad sample limit and a missing folder", async () => {
    await expect(createToolkit({ mcp: {} as never })).rejects.toThrow(/mcp\[0\] must have a tools\(\) method/)
    await expect(createToolkit({ agents: [{}] as never })).rejects.toThrow(/agents\[0\]/)
    await expect(createToolkit({ waitFor: "yes" as never })).rejects.toThrow(/waitFor must be a function/)
    for (const bad of [-2, 1.5, Number.NaN]) {
      await expect(createToolkit({ skills: [], skillSampleLimit: bad })).rejects.toThrow(/skillSampleLimit/)
    }
    const missing = path.join(scratch(), "missing")
    await expect(createToolkit({ skillsDir: missing })).rejects.toThrow(
      `skillsDir: no such folder: ${missing}`,
    )
    const file = path.join(scratch(), "file")
    writeFileSync(file, "x")
    await expect(createToolkit({ skillsDir: ["./", file] })).rejects.toThrow(
      `skillsDir[1] is not a folder: ${file}`,
    )
  })

  it("has no skill tool and an empty catalog without skill options", async () => {
    const toolkit = await createToolkit({ extraTools: [tool("a")], skillsFilter: { a: true } })
    expect(toolkit.get("skill")).toBeUndefined()
    expect(toolkit.skillsPrompt()).toBe("")
  })
})

describe("skill discovery on disk", () => {
  it("follows symlinks once (a cycle ends), skips .git and node_modules, reports unreadable files", () => {
    const dir = scratch()
    skill(dir, "real", "name: real\ndescription: the real one")
    skill(dir, ".git/hooks", "name: in-git")
    skill(dir, "node_modules/pkg", "name: in-modules")
    symlinkSync(path.join(dir, "real"), path.join(dir, "linked"))
    symlinkSync(dir, path.join(dir, "real", "loop"))
    skill(dir, "locked", "name: locked")
    chmodSync(path.join(dir, "locked", "SKILL.md"), 0o000)
    const { skills, skipped } = listSkills({ skillsDir: dir })
    const canRead = process.getuid?.() === 0 // root reads a 000 file
    expect(skills.map((s) => s.name).sort()).toEqual(canRead ? ["locked", "real"] : ["real"])
    // A real folder is walked once: "linked" sorts first, so "real" is found there, once.
    expect(skills.find((s) => s.name === "real")?.location).toBe(path.join(dir, "linked", "SKILL.md"))
    expect(skipped.filter((s) => s.reason === "duplicate-name")).toEqual([])
    if (!canRead)
      expect(skipped).toContainEqual({ location: path.join(dir, "locked", "SKILL.md"), reason: "unreadable" })
    expect(skipped.some((s) => s.location.includes(".git") || s.location.includes("node_modules"))).toBe(
      false,
    )
  })

  it("never throws for a bad SKILL.md and prints nothing", async () => {
    const dir = scratch()
    skill(dir, "bad-yaml", "name: [oops")
    skill(dir, "no-name", "description: nameless")
    skill(dir, "good", "name: good\ndescription: fine")
    const writes: unknown[] = []
    const warn = console.warn
    const log = console.log
    console.warn = (...a: unknown[]) => writes.push(a)
    console.log = (...a: unknown[]) => writes.push(a)
    try {
      const toolkit = await createToolkit({ skillsDir: dir })
      expect(toolkit.skillsPrompt()).toContain("- **good**: fine")
      expect(listSkills({ skillsDir: dir }).skipped).toEqual([
        { location: path.join(dir, "no-name", "SKILL.md"), reason: "missing-name" },
        { location: path.join(dir, "bad-yaml", "SKILL.md"), reason: "malformed-frontmatter" },
      ])
    } finally {
      console.warn = warn
      console.log = log
    }
    expect(writes).toEqual([])
  })
})

describe("the client sends the catalog and the toolkit's waitFor answers", () => {
  const fake = useFakeServer()

  for (const style of STYLES) {
    it(`${style}: system text = systemPrompt, skillsPrompt() joined by a blank line`, async () => {
      const toolkit = await createToolkit({
        skills: [{ name: "deploy", description: "Ship it", content: "Steps." }],
      })
      fake.server.enqueue({ text: "ok" }, { text: "ok" })
      await clientFor(style, fake.server, { systemPrompt: "Be brief." }).run("hi", { toolkit })
      await clientFor(style, fake.server).run("hi", { toolkit })
      const catalog = toolkit.skillsPrompt()
      expect(fake.server.requests[0]?.system).toBe(`Be brief.\n\n${catalog}`)
      expect(fake.server.requests[1]?.system).toBe(catalog)
    })
  }

  it("the toolkit's waitFor answers a suspension when the client has none", async () => {
    const asked: string[] = []
    const gate = defineTool({
      name: "gate",
      description: "needs approval",
      inputSchema: { type: "object" },
      run: (_args, ctx) => (ctx.answer?.ok ? "opened" : pending({ kind: "approval", prompt: "Open?" })),
    })
    const toolkit = await createToolkit({
      extraTools: [gate],
      waitFor: (req) => {
        asked.push(req.prompt)
        return { id: req.id, ok: true }
      },
    })
    fake.server.enqueue({ toolCalls: [{ name: "gate", arguments: {} }] }, { text: "done" })
    const result = await clientFor("openai", fake.server).run("open it", { toolkit })
    expect(result.status).toBe("done")
    expect(asked).toEqual(["Open?"])
    expect(result.toolCalls[0]?.output).toBe("opened")
    // The client's own waitFor comes first.
    const clientAsked: string[] = []
    fake.server.enqueue({ toolCalls: [{ name: "gate", arguments: {} }] }, { text: "done" })
    await clientFor("openai", fake.server, {
      waitFor: (req) => {
        clientAsked.push(req.prompt)
        return { id: req.id, ok: false, reason: "declined" }
      },
    }).run("open it", { toolkit })
    expect(clientAsked).toEqual(["Open?"])
    expect(asked).toEqual(["Open?"])
  })
})
