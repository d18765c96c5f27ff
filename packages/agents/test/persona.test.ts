import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { createVirtualClock } from "../src/clock.js"
import {
  BOOTSTRAP_ORDER,
  HEARTBEAT_OK,
  HEARTBEAT_PROMPT,
  composeSoul,
  fromDir,
  memoryTool,
} from "../src/persona.js"
import { startAgent } from "../src/start-agent.js"
import { until } from "./until.js"

// Upstream's JS port's persona helpers on its examples/persona-agent home (fixtures/SOURCES.md).
const here = path.dirname(fileURLToPath(import.meta.url))
const upstream = JSON.parse(readFileSync(path.join(here, "fixtures/persona-upstream.json"), "utf8"))

let scratch: string
beforeEach(() => {
  scratch = realpathSync(mkdtempSync(path.join(tmpdir(), "tnx-persona-")))
})
afterEach(() => rmSync(scratch, { recursive: true, force: true }))
const place = <T>(value: T): T => JSON.parse(JSON.stringify(value).split("<ROOT>").join(scratch))

function home(name: string, files: Record<string, string>): string {
  const dir = path.join(scratch, name)
  mkdirSync(dir, { recursive: true })
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text)
  return dir
}

describe("persona helpers, equal to upstream's JS port", () => {
  it("exports upstream's order and texts", () => {
    expect(BOOTSTRAP_ORDER).toEqual(upstream.BOOTSTRAP_ORDER)
    expect(HEARTBEAT_OK).toBe(upstream.HEARTBEAT_OK)
    expect(HEARTBEAT_PROMPT).toBe(upstream.HEARTBEAT_PROMPT)
  })

  it("composeSoul: present files in order, all files, none, and a file over 2 MiB", () => {
    expect(composeSoul(home("ava", upstream.files))).toEqual(upstream.composeSoul)
    const all = Object.fromEntries(BOOTSTRAP_ORDER.map((f) => [f, `\n  ${f} body\n\n`]))
    expect(composeSoul(home("full", all))).toEqual(upstream.composeSoulAll)
    expect(composeSoul(path.join(scratch, "missing"))).toEqual(upstream.composeSoulEmpty)
    const big = composeSoul(home("big", { "SOUL.md": "é".repeat(upstream.MAX_FILE_BYTES / 2 + 10) }))
    expect({
      length: big.soul.length,
      tail: big.soul.slice(-60),
      head: big.soul.slice(0, 20),
      found: big.found,
    }).toEqual(upstream.composeSoulBig)
  })

  it("memoryTool: schema, each action's text and the files it leaves, loud on a missing substring", async () => {
    const dir = home("ava", upstream.files)
    const tool = memoryTool(dir)
    expect({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      source: tool.source,
    }).toEqual(upstream.memoryTool)
    for (const call of upstream.memoryCalls) {
      const result = await tool.execute(call.args)
      if (call.args.action === "explode") {
        // Our defineTool checks the schema first, so the model learns the valid actions.
        expect(result).toEqual({
          output: 'invalid arguments: args.action: must be one of "add", "replace", "remove"',
          isError: true,
        })
        continue
      }
      expect({ args: call.args, output: result.output, isError: result.isError }).toEqual({
        args: call.args,
        output: call.output,
        isError: call.isError,
      })
      expect({
        "USER.md": readFileSync(path.join(dir, "USER.md"), "utf8"),
        "MEMORY.md": readFileSync(path.join(dir, "MEMORY.md"), "utf8"),
      }).toEqual(call.files)
    }
    // The next session's soul carries the writes.
    expect(composeSoul(dir)).toEqual(place(upstream.soulAfterMemory))
    const fresh = home("fresh", {})
    const first = await memoryTool(fresh).execute({ action: "add", text: "first note" })
    expect({
      output: first.output,
      isError: first.isError,
      file: readFileSync(path.join(fresh, "MEMORY.md"), "utf8"),
    }).toEqual(upstream.memoryFresh)
  })
})

// examples/persona-agent/fixture.json's H1–H5, run through our runtime on the scripted model.
describe("upstream's persona-agent fixture through the runtime", () => {
  let server: FakeLLMServer
  beforeAll(async () => {
    server = await createFakeLLMServer()
  })
  beforeEach(() => server.reset())
  afterAll(() => server.close())
  const llm = () => ({ baseUrl: `${server.url}/v1`, style: "openai" as const, model: "m", apiKey: "k" })
  const fixture = {
    SOUL: "You are Ava, a calm support assistant.",
    USER: "The user is Muthu; timezone IST.",
    HEARTBEAT: "If it is time, remind about the 3pm sync.",
    MEMORY: "- Onboarded 2026-07.",
  }
  const avaFiles = Object.fromEntries(Object.entries(fixture).map(([k, v]) => [`${k}.md`, v]))
  // The fixture's m-heartbeat script.
  const heartbeatReply = (r: FakeRequestView) => ({
    text:
      r.system.includes("remind about the 3pm sync") && r.lastUserText.includes("Heartbeat")
        ? "Reminder: 3pm sync 🔔"
        : HEARTBEAT_OK,
  })

  it("H1: the composed soul, sections in order, is the system prompt", async () => {
    server.enqueue((r) => ({
      text: `sections:[${BOOTSTRAP_ORDER.filter((f) => r.system.includes(`## ${f}`)).join(",")}]`,
    }))
    const result = await fromDir(home("ava", avaFiles)).run("hi", { llm: llm() })
    expect(result.text).toBe("sections:[SOUL.md,USER.md,HEARTBEAT.md,MEMORY.md]")
  })

  it("H3/H4: the model's memory write lands on disk and only the next session sees it", async () => {
    const dir = home("ava", avaFiles)
    server.addRule({
      match: (r) => r.toolResults.length === 0 && r.lastUserText === "remember",
      reply: {
        toolCalls: [
          { name: "memory", arguments: { action: "add", target: "user", text: "Prefers dark roast" } },
        ],
      },
    })
    server.addRule({
      match: (r) => r.toolResults.length > 0,
      reply: (r) => ({ text: `saved: ${r.toolResults[0]?.content}` }),
    })
    server.addRule({
      match: (r) => r.lastUserText === "recall",
      reply: (r) => ({
        text: r.system.includes("Prefers dark roast") ? "I recall: dark roast" : "no memory",
      }),
    })
    const ava = fromDir(dir)
    expect((await ava.run("remember", { llm: llm() })).text).toBe(
      "saved: ok (add → USER.md); loads next session",
    )
    expect(readFileSync(path.join(dir, "USER.md"), "utf8")).toContain("Prefers dark roast")
    // The same agent keeps its frozen snapshot; a new session reads the disk.
    expect((await ava.run("recall", { llm: llm() })).text).toBe("no memory")
    expect((await fromDir(dir).run("recall", { llm: llm() })).text).toBe("I recall: dark roast")
  })

  it("H5: a due heartbeat speaks, a not-due one is silent, on the runtime's clock", async () => {
    server.addRule({ match: () => true, reply: heartbeatReply })
    const clock = createVirtualClock()
    const due: string[] = []
    const started = startAgent(
      fromDir(home("ava", avaFiles)),
      { llm: llm(), clock },
      { everyMs: 60_000, onBeat: (t) => due.push(t) },
    )
    expect(server.requests).toHaveLength(0)
    clock.advance(60_000)
    await until(() => started.beats.length === 1)
    expect(due).toEqual(["Reminder: 3pm sync 🔔"])
    expect(server.requests[0]?.lastUserText).toContain("Heartbeat")
    await started.stop()

    server.reset()
    server.addRule({ match: () => true, reply: heartbeatReply })
    const quiet = startAgent(
      fromDir(
        home("quiet", {
          ...avaFiles,
          "HEARTBEAT.md":
            "On heartbeat, if there is a due reminder, surface it. Otherwise reply HEARTBEAT_OK.",
        }),
      ),
      { llm: llm(), clock },
      { everyMs: 60_000, onBeat: (t) => due.push(t) },
    )
    clock.advance(60_000)
    await until(() => server.requests.length === 1 && quiet.runtime.stateOf(quiet.handle) === "idle")
    expect(quiet.beats).toEqual([])
    expect(due).toEqual(["Reminder: 3pm sync 🔔"])
    await quiet.stop()
  })

  it("H5: ticks that arrive while a beat is running coalesce into one turn", async () => {
    let first = true
    server.addRule({
      match: () => true,
      reply: () => {
        const delayMs = first ? 50 : 0
        first = false
        return { text: "Reminder: 3pm sync", delayMs }
      },
    })
    const clock = createVirtualClock()
    const started = startAgent(fromDir(home("ava", avaFiles)), { llm: llm(), clock }, { everyMs: 1_000 })
    clock.advance(1_000)
    await until(() => server.requests.length === 1)
    // Three beats while the first turn is in flight: each only posts a tick.
    clock.advance(3_000)
    await until(() => started.beats.length === 1 && started.runtime.stateOf(started.handle) === "idle")
    expect(server.requests).toHaveLength(1)
    clock.advance(1_000)
    await until(() => started.beats.length === 2)
    expect(server.requests).toHaveLength(2)
    // The woken turn drained the queued ticks as one coalesced item.
    const last = server.requests[1]?.lastUserText ?? ""
    expect(last.match(/tick/g)).toHaveLength(1)
    await started.stop()
  })

  it("refuses a bad interval", () => {
    expect(() => startAgent(fromDir(scratch), {}, { everyMs: 0 })).toThrow(
      /everyMs must be a positive number/,
    )
  })
})
