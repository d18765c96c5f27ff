import { describe, expect, it } from "vitest"
import { parse } from "yaml"
import { readFrontmatter } from "./frontmatter.js"

/** What upstream derives from the `yaml` package: scalar values String()-ed and trimmed, or malformed. */
function reference(source: string): { data: Record<string, string>; malformed: boolean } {
  let parsed: unknown
  try {
    parsed = parse(source)
  } catch {
    return { data: {}, malformed: true }
  }
  const data: Record<string, string> = {}
  if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
    for (const [key, value] of Object.entries(parsed)) {
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
        data[key] = String(value).trim()
      }
    }
  }
  return { data, malformed: false }
}

// Hand-picked constructs that SKILL.md files use, and ways to get them wrong.
const corpus: string[] = [
  "",
  "name: x",
  "name: hello-world\ndescription: A tiny example skill.",
  "name: x\ndescription: Use when: the user asks",
  "name: x\ndescription: ends with colon:",
  "name: x\ndescription: a#b not a comment",
  "name: x # a comment\ndescription: y",
  "# leading comment\nname: x\n\n# between\ndescription: y",
  "name: 'single ''quoted'''",
  'name: "double \\"quoted\\" \\t tab \\u00e9 \\x41"',
  'name: "bad escape \\q"',
  'name: "unterminated',
  "name: 'unterminated",
  'description: "folds\n  across\n\n  lines"',
  "description: 'folds\n  across lines'",
  'description: "x" trailing',
  "description: >\n  folded line one\n  line two\n\n  new paragraph\n",
  "description: >-\n  folded strip\n  more\n",
  "description: >+\n  folded keep\n\n\nname: x",
  "description: |\n  literal one\n  literal two\n\n  after blank\nname: x",
  "description: |-\n  strip\n",
  "description: |2\n   indented by explicit\n  two\n",
  "description: >\n  a\n    more indented\n  b\n",
  "description: |\nname: x",
  "description: >\n\n  starts blank\n",
  "description: | # comment\n  with a header comment\n",
  "description: plain\n  continues here\n  and here",
  "description: plain\n\n  after an empty line",
  "description: plain\n  continues: with colon",
  "description:\n  on the next line",
  "description:\n  'quoted next line'",
  "description:\nname: x",
  "description:",
  "description: ~\nname: x",
  "description: null",
  "tags:\n  - a\n  - b\nname: x",
  "tags:\n- a\n- b\nname: x",
  "meta:\n  author: me\n  nested:\n    deep: 1\nname: x",
  "tags: [a, b]\nname: x",
  "tags: {a: 1}\nname: x",
  "tags: [a, b\nname: x",
  "version: 2",
  "version: 2.50",
  "version: -7",
  "version: 0x1F",
  "version: 0o17",
  "version: 1e3",
  "version: .inf",
  "version: -.Inf",
  "version: .nan",
  "version: 007",
  "version: 1_000",
  "enabled: true\nother: False\nthird: TRUE\nfourth: yes",
  "name: x\nname: y",
  "name: x\n  bad: indentation",
  "  name: indented",
  "just a line",
  "just a line\nname: x",
  "just a line\n  continued",
  "  name: x\n  description: y",
  "  name: x\ndescription: y",
  "- a\n- b",
  "name: x\n- a",
  '"quoted key": v\nname: x',
  "key with spaces: v\nname: x",
  "name: x\r\ndescription: crlf\r\n",
  "name:   lots of space   ",
  "name: x\ndescription: 'it''s: fine'",
  "name: `backtick`",
  "name: @at",
  "name: [unclosed",
  'name: x\ndescription: "multi\n  line" # comment',
  "name: x\ndescription: >\n  one\n two\n",
  "name: x\ndescription: |\n    four\n  two\n",
]

describe("readFrontmatter: equal to the yaml package", () => {
  for (const source of corpus) {
    it(JSON.stringify(source), () => {
      const ours = readFrontmatter(`---\n${source}\n---\nbody\n`)
      expect({ data: ours.data, malformed: ours.malformed }).toEqual(reference(source))
    })
  }

  it("agrees on 500 generated documents built from the same constructs", () => {
    // A fixed-seed generator: the same documents every run.
    let seed = 23
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const values = [
      " plain words",
      " words: with colon",
      " 'single'",
      ' "double \\n escape"',
      " >\n  folded\n  text\n",
      " |\n  literal\n\n  text\n",
      " |-\n  stripped\n",
      "\n  - item\n  - item",
      "\n  nested: map",
      " [a, b]",
      " 42",
      " true",
      " ~",
      "",
      " continued\n  plain line",
      " x # comment",
      ' "unterminated',
      "\n bad\n  indent: here",
    ]
    const keys = ["name", "description", "version", "name", "tags"]
    for (let doc = 0; doc < 500; doc++) {
      const lines: string[] = []
      const count = 1 + next(4)
      for (let k = 0; k < count; k++) {
        if (next(6) === 0) lines.push("# a comment")
        lines.push(`${keys[next(keys.length)]}:${values[next(values.length)]}`)
      }
      const source = lines.join("\n")
      const ours = readFrontmatter(`---\n${source}\n---\n`)
      expect({ source, data: ours.data, malformed: ours.malformed }).toEqual({ source, ...reference(source) })
    }
  })

  it("keeps the body bytes after the closing fence and reads no fences as no frontmatter", () => {
    expect(readFrontmatter("---\nname: x\n---\n\n# Body\n").content).toBe("\n# Body\n")
    expect(readFrontmatter("---\r\nname: x\r\n---\r\nBody").content).toBe("Body")
    expect(readFrontmatter("# no frontmatter\nname: x")).toEqual({
      data: {},
      content: "# no frontmatter\nname: x",
      malformed: false,
    })
  })
})
