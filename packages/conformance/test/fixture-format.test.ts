import { readFileSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { FixtureError } from "../src/fixture.js"
import { parseFixture } from "../src/load.js"
import { ConformanceFailure, runFixture } from "../src/runner.js"

const FILE = "fixtures/sample-case.json"

/** A small valid fixture; tests break one field at a time. */
function sample(): Record<string, any> {
  return {
    description: "echo once",
    tools: [{ name: "echo", params: { text: "string" }, returns: "echo: {text}" }],
    llm: [
      { when: { toolResults: false }, reply: { toolCalls: [{ name: "echo", args: { text: "hi" } }] } },
      { when: { toolResults: true }, reply: { text: "got {toolResults}" } },
    ],
    steps: [{ do: "run", prompt: "say hi", expect: { result: { status: "done", text: "got echo: hi" } } }],
  }
}

function parse(fixture: unknown, file = FILE) {
  return parseFixture(JSON.stringify(fixture), file)
}

function problemOf(fixture: unknown, file = FILE): string {
  try {
    parse(fixture, file)
  } catch (error) {
    expect(error).toBeInstanceOf(FixtureError)
    return (error as Error).message
  }
  throw new Error("the fixture was accepted")
}

describe("fixture validation", () => {
  it("accepts the sample and names it after its file", () => {
    expect(parse(sample()).name).toBe("sample-case")
  })

  it("names the file and the field of every problem", () => {
    const noDescription = sample()
    delete noDescription.description
    expect(problemOf(noDescription)).toBe(`${FILE}: description: is required`)

    const badVerb = sample()
    badVerb.steps[0].do = "rnu"
    expect(problemOf(badVerb)).toMatch(
      /^fixtures\/sample-case\.json: steps\[0\]\.do: must be one of "run", "ask", /,
    )

    const typo = sample()
    typo.steps[0].promt = "x"
    expect(problemOf(typo)).toMatch(
      /steps\[0\]\.promt: is not an allowed property \(allowed: do, as, expect, note, prompt, fresh\)$/,
    )

    const expectTypo = sample()
    expectTypo.steps[0].expect.stauts = "done"
    expect(problemOf(expectTypo)).toMatch(/steps\[0\]\.expect\.stauts: is not an allowed property/)

    const badParam = sample()
    badParam.tools[0].params.text = "str"
    expect(problemOf(badParam)).toBe(
      `${FILE}: tools[0].params.text: must be one of "string", "number", "integer", "boolean", "object", "array"`,
    )

    const noPrompt = sample()
    noPrompt.steps.push({ do: "run" })
    expect(problemOf(noPrompt)).toBe(`${FILE}: steps[1].prompt: is required`)

    const twoBehaviours = sample()
    twoBehaviours.tools[0].fails = "boom"
    expect(problemOf(twoBehaviours)).toMatch(
      /tools\[0\]: a tool needs exactly one behaviour .* got returns, fails/,
    )

    const badPlaceholder = sample()
    badPlaceholder.tools[0].returns = "echo {txt}"
    expect(problemOf(badPlaceholder)).toMatch(/tools\[0\]\.returns: placeholder \{txt\} is not a parameter/)

    const badReplyVariable = sample()
    badReplyVariable.llm[1].reply.text = "got {results}"
    expect(problemOf(badReplyVariable)).toMatch(/llm\[1\]\.reply\.text: unknown placeholder \{results\}/)

    const unknownTool = sample()
    unknownTool.registry = [{ name: "a", does: "x", tools: ["nope"] }]
    expect(problemOf(unknownTool)).toMatch(/registry\[0\]\.tools\[0\]: unknown tool "nope"/)

    const homeless = sample()
    homeless.registry = [{ name: "a", does: "x", home: "ava" }]
    expect(problemOf(homeless)).toMatch(/registry\[0\]\.home: unknown home "ava"/)
    homeless.homes = { ava: { "SOUL.md": "s" } }
    homeless.registry[0].soul = "other"
    expect(problemOf(homeless)).toMatch(
      /registry\[0\]\.soul: an agent with a home has the soul its folder composes/,
    )

    const badCompaction = sample()
    badCompaction.steps.push({ do: "compact", messages: [], options: { maxTokens: 10 } })
    expect(problemOf(badCompaction)).toMatch(/steps\[1\]\.options\.summarize: is required/)

    const soulless = sample()
    soulless.registry = [{ name: "a", does: "x" }]
    soulless.llm[0].when.agent = "a"
    expect(problemOf(soulless)).toMatch(/llm\[0\]\.when\.agent: agent "a" has no soul/)

    const badAnswer = sample()
    badAnswer.steps.push({ do: "resume", answer: { id: "x" } })
    expect(problemOf(badAnswer)).toMatch(/steps\[1\]\.answer\.ok: is required/)

    const nestedExpect = sample()
    nestedExpect.steps.push({ do: "all", steps: [{ do: "run", prompt: "a", expect: {} }] })
    expect(problemOf(nestedExpect)).toMatch(/steps\[1\]\.steps\[0\]\.expect: not allowed inside `all`/)
  })

  it("is the format every fixture file names in $schema", () => {
    const dir = join(import.meta.dirname, "../fixtures")
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".json"))) {
      expect({ file, $schema: JSON.parse(readFileSync(join(dir, file), "utf8")).$schema }).toEqual({
        file,
        $schema: "../fixture.schema.json",
      })
    }
  })

  it("refuses text that is not JSON and file names that are not kebab-case", () => {
    expect(() => parseFixture("{ nope", FILE)).toThrow(/sample-case\.json: \(json\): not valid JSON/)
    expect(() => parse(sample(), "fixtures/SampleCase.json")).toThrow(
      /\(file name\): a fixture file name is kebab-case/,
    )
  })
})

describe("the runner fails loudly", () => {
  it("reports a wrong expectation with fixture, style, step and field", async () => {
    const wrong = sample()
    wrong.steps[0].expect.result.text = "got something else"
    const run = runFixture(parse(wrong), "openai")
    await expect(run).rejects.toThrow(ConformanceFailure)
    await expect(runFixture(parse(wrong), "anthropic")).rejects.toThrow(
      "sample-case [anthropic] steps[0] (run):\n" +
        '  steps[0].expect.result.text: expected "got something else", got "got echo: hi"',
    )
  })

  it("reports an LLM request no rule matched", async () => {
    const unscripted = sample()
    unscripted.llm.pop()
    unscripted.steps[0].expect = { throws: "LLMHttpError" }
    await expect(runFixture(parse(unscripted), "openai")).rejects.toThrow(/LLM request #1 matched no rule/)
  })

  it("reports a step that should have thrown, and a reference to nothing", async () => {
    const noThrow = sample()
    noThrow.steps[0].expect = { throws: "AnswerMismatchError" }
    await expect(runFixture(parse(noThrow), "openai")).rejects.toThrow(
      /expect\.throws: expected AnswerMismatchError, but the step returned/,
    )
    const dangling = sample()
    dangling.steps.push({ do: "continueRun", messages: "$nothing.messages" })
    await expect(runFixture(parse(dangling), "openai")).rejects.toThrow(
      /\(continueRun\): steps\[1\]\.messages: \$nothing\.messages refers to nothing saved/,
    )
  })
})
