import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import {
  SKILLS_PROMPT_PREAMBLE,
  SKILL_TOOL_DESCRIPTION,
  type SkillDef,
  type ToolkitOptions,
  createToolkit,
  listSkills,
} from "../../src/index.js"

// Outputs of upstream's JS port on the same skill tree (see ../fixtures/upstream-toolkit/SOURCES.md).
const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.join(here, "../fixtures/upstream-toolkit")
// The tree is kept as JSON (a formatter would rewrite SKILL.md frontmatter) and written out here.
const tree = JSON.parse(readFileSync(path.join(fixtures, "skills-tree.json"), "utf8")) as {
  files: Record<string, string>
}
const scratch = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-skills-")))
const root = path.join(scratch, "skills")
for (const [file, text] of Object.entries(tree.files)) {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
  writeFileSync(path.join(root, file), text, { mode: file.endsWith(".sh") ? 0o755 : 0o644 })
}
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const expected = JSON.parse(readFileSync(path.join(fixtures, "skills.json"), "utf8")) as {
  SKILL_TOOL_DESCRIPTION: string
  SKILLS_PROMPT_PREAMBLE: string
  cases: {
    label: string
    options: Record<string, unknown>
    prompt: string
    hasTool: boolean
    tool?: unknown
    calls: { args: Record<string, unknown>; output: string; isError: boolean; metadata?: unknown }[]
  }[]
  inventory: { skills: Record<string, unknown>[]; skipped: unknown[] }
}

const rootUrl = pathToFileURL(root).href
const place = (text: string) => text.split("<ROOT_URL>").join(rootUrl).split("<ROOT>").join(root)
const placed = <T>(value: T): T => JSON.parse(place(JSON.stringify(value)))

// Functions do not survive JSON: the provider cases get theirs here, as the generator had them.
const providers: Record<string, ToolkitOptions["skillProvider"]> = {
  provider: async () => [
    { name: "first", description: "from provider", content: "two" },
    { name: "second", description: "provided", content: "three" },
  ],
  "throwing provider": () => {
    throw new Error("boom")
  },
}

describe("skills, byte for byte upstream's JS port", () => {
  it("exports the verbatim texts", () => {
    expect(SKILL_TOOL_DESCRIPTION).toBe(expected.SKILL_TOOL_DESCRIPTION)
    expect(SKILLS_PROMPT_PREAMBLE).toBe(expected.SKILLS_PROMPT_PREAMBLE)
  })

  for (const c of expected.cases) {
    it(`${c.label}: skillsPrompt(), the tool and every call's output`, async () => {
      const options = placed(c.options) as ToolkitOptions
      const provider = providers[c.label]
      if (provider) options.skillProvider = provider
      const toolkit = await createToolkit(options)
      expect(toolkit.skillsPrompt()).toBe(place(c.prompt))
      const tool = toolkit.get("skill")
      expect(tool !== undefined).toBe(c.hasTool)
      if (!tool) return
      expect({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
        source: tool.source,
      }).toEqual(c.tool)
      for (const call of c.calls) {
        const result = await toolkit.execute("skill", call.args)
        expect(result.output).toBe(place(call.output))
        expect(result.isError).toBe(call.isError)
        expect(result.metadata).toEqual(call.metadata === undefined ? undefined : placed(call.metadata))
      }
    })
  }

  it("listSkills reports what it found and what it skipped, in upstream's order", () => {
    const data = (expected.cases.find((c) => c.label === "data")?.options.skills ?? []) as SkillDef[]
    const inventory = listSkills({ skillsDir: root, skills: data })
    expect(
      inventory.skills.map((s) => ({
        name: s.name,
        description: s.description,
        location: s.location,
        content: s.content,
      })),
    ).toEqual(placed(expected.inventory.skills).map((s) => JSON.parse(JSON.stringify(s))))
    expect(inventory.skipped).toEqual(placed(expected.inventory.skipped))
  })
})
