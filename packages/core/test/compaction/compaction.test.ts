import { readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import {
  ConfigError,
  type Message,
  MemoryStore,
  SUMMARY_PREFIX,
  compactMessages,
  compactor,
  createToolkit,
  estimateTokens,
} from "../../src/index.js"
import { STYLES, approve, clientFor, useFakeServer } from "../helpers.js"

// Upstream's JS port's compactor on its examples/compaction fixture and variants (SOURCES.md).
const here = path.dirname(fileURLToPath(import.meta.url))
const expected = JSON.parse(
  readFileSync(path.join(here, "../fixtures/upstream-toolkit/compaction.json"), "utf8"),
) as {
  cases: {
    label: string
    options: { maxTokens: number; keepTail?: number; flushToMemory?: boolean; countTokens?: string }
    input: Message[]
    inputTokens: number
    output: Message[] | null
  }[]
}
const summarize = (older: Message[]) => `summarized ${older.length} messages`

describe("compactMessages, byte for byte upstream's compactor", () => {
  for (const c of expected.cases) {
    it(c.label, async () => {
      expect(estimateTokens(c.input)).toBe(c.inputTokens)
      const { countTokens, ...rest } = c.options
      const opts = { ...rest, summarize, countTokens: countTokens ? (m: Message[]) => m.length : undefined }
      const ours = await compactMessages(c.input, opts)
      expect(ours === undefined ? null : JSON.stringify(ours)).toBe(
        c.output === null ? null : JSON.stringify(c.output),
      )
    })
  }

  it("writes the summary as a user message for Anthropic, whose transcripts have no system role", async () => {
    const c = expected.cases.find((x) => x.label === "anthropic blocks")
    if (!c?.output) throw new Error("fixture case missing")
    const { countTokens: _none, ...opts } = c.options
    const ours = await compactMessages(c.input, { ...opts, summarize, style: "anthropic" })
    expect(ours).toEqual(c.output.map((m, i) => (i === 0 ? { ...m, role: "user" } : m)))
  })

  it("folds an earlier summary into the next one instead of stacking them", async () => {
    const c = expected.cases.find((x) => x.label === "no system prompt")
    if (!c?.output) throw new Error("fixture case missing")
    // Grow the compacted transcript past the budget again.
    const grown = [...c.output, ...c.input.slice(0, 60)]
    const seen: Message[][] = []
    const again = await compactMessages(grown, {
      maxTokens: c.options.maxTokens,
      keepTail: c.options.keepTail,
      summarize: (older) => {
        seen.push(older)
        return "second"
      },
    })
    expect(seen[0]?.[0]).toEqual(c.output[0])
    expect(again?.[0]).toEqual({ role: "system", content: `${SUMMARY_PREFIX}second` })
    expect(
      again?.filter((m) => String((m as { content?: unknown }).content).startsWith(SUMMARY_PREFIX)),
    ).toHaveLength(1)
  })

  it("refuses malformed options with a ConfigError naming the field", async () => {
    const bad: [unknown, RegExp][] = [
      [{ summarize }, /compaction.maxTokens must be a positive integer/],
      [{ maxTokens: 0, summarize }, /compaction.maxTokens/],
      [{ maxTokens: 1.5, summarize }, /compaction.maxTokens/],
      [
        { maxTokens: 10, keepTail: 10, summarize },
        /compaction.keepTail must be an integer in \[0, maxTokens\)/,
      ],
      [{ maxTokens: 10, keepTail: -1, summarize }, /compaction.keepTail/],
      [{ maxTokens: 10 }, /compaction.summarize must be a function/],
      [{ maxTokens: 10, summarize, countTokens: 3 }, /compaction.countTokens must be a function/],
    ]
    for (const [opts, message] of bad) {
      await expect(compactMessages([], opts as never)).rejects.toThrow(message)
      expect(() => compactor(opts as never)).toThrow(ConfigError)
      expect(() =>
        clientFor("openai", { url: "http://127.0.0.1:1" } as never, { compaction: opts as never }),
      ).toThrow(message)
    }
  })
})

/** A history of `turns` plain exchanges, about 60 tokens each. */
function history(turns: number): Message[] {
  const out: Message[] = []
  for (let i = 0; i < turns; i++) {
    out.push({ role: "user", content: `question ${i} ${"pad ".repeat(40)}` } as Message)
    out.push({ role: "assistant", content: `answer ${i}` } as Message)
  }
  return out
}

describe("the compaction option replaces the working transcript", () => {
  const fake = useFakeServer()

  for (const style of STYLES) {
    it(`${style}: at or below maxTokens the request is byte-identical to one without compaction`, async () => {
      fake.server.enqueue({ text: "a" }, { text: "a" })
      const plainHistory = style === "openai" ? history(2) : []
      await clientFor(style, fake.server, { systemPrompt: "S" }).run("hi", { history: plainHistory })
      await clientFor(style, fake.server, {
        systemPrompt: "S",
        compaction: { maxTokens: 100_000, summarize },
      }).run("hi", {
        history: plainHistory,
      })
      expect(JSON.stringify(fake.server.requests[1]?.body)).toBe(
        JSON.stringify(fake.server.requests[0]?.body),
      )
    })
  }

  it("openai: the request, the result and the store hold the compacted transcript; the system prompt stays", async () => {
    const store = new MemoryStore()
    await store.save("c1", history(30))
    fake.server.enqueue({ text: "fine" })
    const client = clientFor("openai", fake.server, {
      systemPrompt: "You are Ava.",
      store,
      compaction: { maxTokens: 1000, keepTail: 300, summarize },
    })
    const result = await client.ask("next", { id: "c1" })
    const sent = fake.server.requests[0]?.body.messages as { role: string; content: string }[]
    expect(sent[0]).toEqual({ role: "system", content: "You are Ava." })
    expect(sent[1]?.role).toBe("system")
    expect(sent[1]?.content.startsWith(`${SUMMARY_PREFIX}summarized `)).toBe(true)
    expect(sent.length).toBeLessThan(61)
    expect(result.messages).toEqual([...sent.slice(1), { role: "assistant", content: "fine" }])
    expect(await store.get("c1")).toEqual(result.messages)
  })

  it("a halted run saves the compacted transcript and the resume goes on from it", async () => {
    const store = new MemoryStore()
    await store.save("c2", history(30))
    const toolkit = await createToolkit({ extraTools: [approve] })
    fake.server.enqueue({ toolCalls: [{ name: "approve", arguments: { what: "x" } }] }, { text: "done" })
    const client = clientFor("anthropic", fake.server, { store, compaction: { maxTokens: 1000, summarize } })
    const halted = await client.ask("approve x", { id: "c2", toolkit })
    expect(halted.status).toBe("pending")
    const saved = (await store.get("c2")) as Message[]
    expect(saved[0]).toMatchObject({ role: "user" })
    expect(String((saved[0] as { content: unknown }).content).startsWith(SUMMARY_PREFIX)).toBe(true)
    const request = halted.pending as NonNullable<typeof halted.pending>
    const done = await client.continueRun({ id: "c2", toolkit, answer: { id: request.id, ok: true } })
    expect(done.status).toBe("done")
    // The resumed request starts from the compacted transcript, not the 60 original messages.
    const resumed = fake.server.requests[1]?.body.messages as unknown[]
    // Everything up to the halted turn's placeholder result, which the resume replaces.
    expect(resumed.slice(0, saved.length - 1)).toEqual(saved.slice(0, -1))
    expect(resumed.length).toBeLessThan(30)
  })

  it("a throwing summarize leaves that request uncompacted and the run goes on", async () => {
    fake.server.enqueue({ text: "ok" })
    const result = await clientFor("openai", fake.server, {
      compaction: {
        maxTokens: 100,
        summarize: () => {
          throw new Error("model down")
        },
      },
    }).run("hi", { history: history(5) })
    expect(result.status).toBe("done")
    expect(result.messages).toHaveLength(12)
  })

  it("compactor() as a beforeLLM hook shortens the request only; the transcript is kept", async () => {
    fake.server.enqueue({ text: "ok" })
    const result = await clientFor("openai", fake.server, {
      hooks: { beforeLLM: compactor({ maxTokens: 500, summarize }) },
    }).run("hi", { history: history(20) })
    const sent = fake.server.requests[0]?.body.messages as unknown[]
    expect(sent.length).toBeLessThan(41)
    expect(result.messages).toHaveLength(42)
  })
})
