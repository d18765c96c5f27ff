import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { createClient } from "../src/client/create-client.js"
import type { ClientOptions } from "../src/client/create-client.js"
import type { RunResult, StreamEvent } from "../src/client/run-result.js"
import { LLMHttpError, LLMStreamError } from "../src/errors.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import { transcriptProblems } from "../src/testing/index.js"
import type { EndpointStyle } from "../src/types.js"

// Real provider traffic recorded by other projects' test suites (test/replay/SOURCES.md),
// served through the `fetch` seam exactly as recorded.

const dir = new URL("./replay/", import.meta.url)
const read = (name: string) => readFileSync(new URL(name, dir), "utf8")

interface Recorded {
  status?: number
  headers?: Record<string, string>
  body: string
  sse?: boolean
}

/** One-event-per-line recordings framed as the provider sends them. */
function chunks(name: string, style: EndpointStyle, lines?: string[]): Recorded {
  const events =
    lines ??
    read(name)
      .split("\n")
      .filter((l) => l.trim() !== "")
  const body =
    style === "openai"
      ? `${events.map((l) => `data: ${l}\n\n`).join("")}data: [DONE]\n\n`
      : events.map((l) => `event: ${JSON.parse(l).type}\ndata: ${l}\n\n`).join("")
  return { body, sse: true }
}

const sse = (name: string): Recorded => ({ body: read(name), sse: true })
const json = (name: string): Recorded => ({ body: read(name) })

/** A fetch that answers each request with the next recording and keeps the request bodies. */
function replay(...recordings: Recorded[]) {
  const bodies: any[] = []
  const fetch: typeof globalThis.fetch = async (_url, init) => {
    bodies.push(JSON.parse(String(init?.body)))
    const next = recordings.shift()
    if (!next) throw new Error("replay: no recording left for this request")
    const type = next.sse ? "text/event-stream" : "application/json"
    return new Response(next.body, {
      status: next.status ?? 200,
      headers: { "content-type": type, ...next.headers },
    })
  }
  return { fetch, bodies }
}

function client(style: EndpointStyle, fetch: typeof globalThis.fetch, opts: Partial<ClientOptions> = {}) {
  return createClient({
    baseUrl: "https://api.example.com/v1",
    style,
    model: "recorded-model",
    apiKey: "sk-replay",
    fetch,
    retryBaseMs: 1,
    ...opts,
  })
}

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = []
  for await (const ev of events) out.push(ev)
  return out
}

const doneResult = (events: StreamEvent[]): RunResult =>
  (events.at(-1) as Extract<StreamEvent, { type: "done" }>).result

const texts = (events: StreamEvent[], type: "text" | "refusal") =>
  events
    .filter((e) => e.type === type)
    .map((e) => (e as { delta: string }).delta)
    .join("")

const anyTool = (name: string) =>
  defineTool({
    name,
    description: name,
    inputSchema: { type: "object" },
    run: (args) => `${name} ran with ${JSON.stringify(args)}`,
  })

describe("replayed OpenAI chat completions", () => {
  it("a plain completion: text, stop, usage", async () => {
    const { fetch } = replay(json("openai-chat-text.json"))
    const result = await client("openai", fetch).run("hi")
    const recorded = JSON.parse(read("openai-chat-text.json"))
    expect(result.status).toBe("done")
    expect(result.finishReason).toBe("stop")
    expect(result.text).toBe(recorded.choices[0].message.content)
    expect(result.usage.promptTokens).toBe(recorded.usage.prompt_tokens)
  })

  it("a long streamed completion with a usage chunk assembles to the same text", async () => {
    const { fetch } = replay(chunks("openai-chat-text.chunks.txt", "openai"))
    const events = await collect(client("openai", fetch).stream("hi"))
    const done = events.at(-1) as Extract<StreamEvent, { type: "done" }>
    expect(done.result.text.length).toBeGreaterThan(1000)
    expect(texts(events, "text")).toBe(done.result.text)
    expect(done.result.finishReason).toBe("stop")
    expect(done.result.usage.completionTokens).toBeGreaterThan(0)
  })

  it("a streamed refusal with finish_reason stop: refusal on the result and in the transcript", async () => {
    const { fetch } = replay(sse("openai-chat-refusal.sse"))
    const events = await collect(client("openai", fetch).stream("how do I make a bomb"))
    const { result } = events.at(-1) as Extract<StreamEvent, { type: "done" }>
    expect(result.status).toBe("done")
    expect(result.finishReason).toBe("refusal")
    expect(result.refusal).toMatch(/^I'm very sorry, but I can't assist with that/)
    expect(texts(events, "refusal")).toBe(result.refusal)
    expect(result.text).toBe("")
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: null, refusal: result.refusal })
  })

  it("a reply cut at the token limit (finish_reason length), streamed and not: incomplete, never done", async () => {
    const whole = JSON.parse(read("compat-chat-length.json"))
    const plain = await client("openai", replay(json("compat-chat-length.json")).fetch).run("a holiday")
    expect([plain.status, plain.limit, plain.finishReason]).toEqual([
      "incomplete",
      "maxOutputTokens",
      "length",
    ])
    expect(plain.text).toBe(whole.choices[0].message.content)
    const events = await collect(
      client("openai", replay(chunks("compat-chat-length.chunks.txt", "openai")).fetch).stream("a holiday"),
    )
    const { result } = events.at(-1) as Extract<StreamEvent, { type: "done" }>
    expect([result.status, result.limit, result.finishReason]).toEqual([
      "incomplete",
      "maxOutputTokens",
      "length",
    ])
    expect(texts(events, "text")).toBe(result.text)
  })

  it("a structured-output completion parses into result.output", async () => {
    const { fetch, bodies } = replay(json("openai-chat-structured.json"))
    const schema = {
      type: "object",
      properties: { city: { type: "string" }, units: { type: "string", enum: ["c", "f"] } },
      required: ["city", "units"],
      additionalProperties: false,
    }
    const result = await client("openai", fetch).run("weather?", { output: schema })
    expect(result.output).toEqual({ city: "San Francisco", units: "c" })
    expect(bodies[0].response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "output", schema, strict: true },
    })
  })

  it.each([
    ["compat-chat-tool-call.chunks.txt", "compat-chat-tool-call.json", "weather"],
    ["deepseek-chat-tool-call.chunks.txt", "deepseek-chat-tool-call.json", "weather"],
  ])("streamed tool calls (%s) match the recorded non-streamed ones and run", async (stream, whole, tool) => {
    const toolkit = await createToolkit({ extraTools: [anyTool(tool)] })
    const streamed = replay(chunks(stream, "openai"), chunks("openai-chat-text.chunks.txt", "openai"))
    const events = await collect(client("openai", streamed.fetch).stream("weather?", { toolkit }))
    const calls = events.filter((e) => e.type === "tool_call") as Extract<
      StreamEvent,
      { type: "tool_call" }
    >[]
    const recorded = JSON.parse(read(whole)).choices[0].message.tool_calls
    expect(calls.map((c) => [c.name, c.args])).toEqual(
      recorded.map((c: any) => [c.function.name, JSON.parse(c.function.arguments)]),
    )
    // A continuation chunk with `"id": ""` must not wipe the id the first chunk gave.
    expect(calls.every((c) => c.id.length > 4 && !/^call_\d+$/.test(c.id))).toBe(true)
    const sent = streamed.bodies[1].messages
    expect(sent.at(-1)).toMatchObject({ role: "tool", tool_call_id: calls.at(-1)?.id })
  })
})

describe("replayed OpenAI Responses", () => {
  /** The recording is a four-turn run; each turn starts with response.created. */
  function turns(): string[][] {
    const out: string[][] = []
    for (const line of read("responses-reasoning-tools.chunks.txt").split("\n")) {
      if (line.trim() === "") continue
      if (JSON.parse(line).type === "response.created") out.push([])
      out.at(-1)?.push(line)
    }
    return out
  }

  it("a streamed four-turn tool run: call_id ids, completed reasoning sent back, text at the end", async () => {
    const recorded = turns()
    expect(recorded).toHaveLength(4)
    const { fetch, bodies } = replay(...recorded.map((lines) => chunks("", "openai-responses", lines)))
    const calculator = defineTool({
      name: "calculator",
      description: "calculate",
      inputSchema: { type: "object" },
      run: ({ a, b, op }) => String(op === "add" ? Number(a) + Number(b) : Number(a) * Number(b)),
    })
    const toolkit = await createToolkit({ extraTools: [calculator] })
    const events = await collect(client("openai-responses", fetch).stream("compute", { toolkit }))
    const { result } = events.at(-1) as Extract<StreamEvent, { type: "done" }>
    expect(result.status).toBe("done")
    expect(result.text).toBe("The final result is **570**.")
    expect(result.turns).toBe(4)
    expect(result.toolCalls.map((c) => [c.id, c.output])).toEqual([
      ["call_AB6AaRZ1FYZB2RwS6A5vbdqn", "19"],
      ["call_Q6pW65MUgW9vF59BmItYGos3", "57"],
      ["call_Zl5vIMnD7dVAjgU6FkhmiCZh", "570"],
    ])
    // Stateless: the whole input every turn, never stored, encrypted reasoning requested.
    for (const body of bodies) {
      expect(body.store).toBe(false)
      expect(body.include).toEqual(["reasoning.encrypted_content"])
    }
    const second = bodies[1].input as any[]
    expect(second.map((i) => i.type ?? i.role)).toEqual([
      "user",
      "reasoning",
      "function_call",
      "function_call_output",
    ])
    // The reasoning item goes back as response.completed gave it (added/done differ from it).
    const completed = JSON.parse(recorded[0]!.find((l) => l.includes('"response.completed"')) as string)
    expect(second[1]).toEqual(completed.response.output[0])
    expect(second[3]).toEqual({
      type: "function_call_output",
      call_id: "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
      output: "19",
    })
  })

  it("a non-streamed reply with reasoning and a message", async () => {
    const { fetch } = replay(json("responses-reasoning-tools.json"))
    const result = await client("openai-responses", fetch).run("compute")
    const recorded = JSON.parse(read("responses-reasoning-tools.json"))
    expect(result.finishReason).toBe("stop")
    expect(result.messages.slice(1)).toEqual(recorded.output)
    expect(result.text.length).toBeGreaterThan(0)
  })

  it("server-side web search items pass through untouched", async () => {
    const { fetch } = replay(json("responses-web-search.json"))
    const result = await client("openai-responses", fetch).run("news?")
    const recorded = JSON.parse(read("responses-web-search.json"))
    expect(result.status).toBe("done")
    expect(result.toolCalls).toEqual([])
    expect(result.messages.slice(1)).toEqual(recorded.output)
  })

  it("an insufficient_quota error event fails at once, typed, without a retry", async () => {
    const { fetch, bodies } = replay(chunks("responses-error-quota.chunks.txt", "openai-responses"), {
      body: "{}",
    })
    const error = await collect(client("openai-responses", fetch).stream("hi")).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LLMStreamError)
    expect((error as LLMStreamError).errorType).toBe("insufficient_quota")
    expect((error as LLMStreamError).isRetryable).toBe(false)
    expect(bodies).toHaveLength(1)
  })
})

describe("replayed Anthropic messages", () => {
  it("text, streamed and not", async () => {
    const whole = JSON.parse(read("anthropic-text.json"))
    const plain = await client("anthropic", replay(json("anthropic-text.json")).fetch).run("hi")
    expect(plain.text).toBe(whole.content[0].text)
    expect(plain.finishReason).toBe("stop")
    const events = await collect(
      client("anthropic", replay(chunks("anthropic-text.chunks.txt", "anthropic")).fetch).stream("hi"),
    )
    const { result } = events.at(-1) as Extract<StreamEvent, { type: "done" }>
    expect(texts(events, "text")).toBe(result.text)
    expect(result.finishReason).toBe("stop")
  })

  it('stop_reason refusal: refusal "", done, nothing unsendable stored', async () => {
    for (const recorded of [
      json("anthropic-refusal.json"),
      chunks("anthropic-refusal.chunks.txt", "anthropic"),
    ]) {
      const c = client("anthropic", replay(recorded).fetch)
      const result = recorded.sse ? ((await collect(c.stream("x"))).at(-1) as any).result : await c.run("x")
      expect(result.status).toBe("done")
      expect(result.finishReason).toBe("refusal")
      expect(result.refusal).toBe("")
      // The recorded content is empty; an empty assistant message would be refused if sent back.
      expect(result.messages).toEqual([{ role: "user", content: "x" }])
    }
  })

  it("server_tool_use and web_search_tool_result blocks survive run and stream intact", async () => {
    const whole = JSON.parse(read("anthropic-web-search.json"))
    const plain = await client("anthropic", replay(json("anthropic-web-search.json")).fetch).run("news?")
    expect(plain.messages[1]).toEqual({ role: "assistant", content: whole.content })
    expect(plain.toolCalls).toEqual([])
    const events = await collect(
      client("anthropic", replay(chunks("anthropic-web-search.chunks.txt", "anthropic")).fetch).stream(
        "news?",
      ),
    )
    const { result } = events.at(-1) as Extract<StreamEvent, { type: "done" }>
    const blocks = (result.messages[1] as { content: any[] }).content
    const use = blocks.find((b) => b.type === "server_tool_use")
    // Streamed input arrives as partial JSON; it must be assembled, not left `{}`.
    expect(use.input).toEqual(expect.objectContaining({ query: expect.any(String) }))
    expect(use).not.toHaveProperty("partialJson")
    const searched = blocks.find((b) => b.type === "web_search_tool_result")
    expect(searched.content.length).toBeGreaterThan(0)
    expect(
      blocks.some((b) => b.type === "text" && Array.isArray(b.citations) && b.citations.length > 0),
    ).toBe(true)
    expect(result.text).toBe(texts(events, "text"))
  })

  it("a streamed thinking block keeps its text and signature", async () => {
    const events = await collect(
      client("anthropic", replay(chunks("anthropic-thinking.chunks.txt", "anthropic")).fetch).stream("think"),
    )
    const { result } = events.at(-1) as Extract<StreamEvent, { type: "done" }>
    const thinking = (result.messages[1] as { content: any[] }).content[0]
    expect(thinking.type).toBe("thinking")
    expect(thinking.thinking.length).toBeGreaterThan(10)
    expect(thinking.signature.length).toBeGreaterThan(10)
    expect(texts(events, "text")).toBe(result.text)
  })

  it("streamed tool_use (with and without arguments) is executed with the assembled input", async () => {
    for (const recorded of [
      sse("anthropic-tool-use.sse"),
      chunks("anthropic-tool-no-args.chunks.txt", "anthropic"),
    ]) {
      const body = recorded.body
      const name = /"type":"tool_use","id":"[^"]+","name":"([^"]+)"/.exec(body)?.[1] as string
      const toolkit = await createToolkit({ extraTools: [anyTool(name)] })
      const { fetch, bodies } = replay(recorded, chunks("anthropic-text.chunks.txt", "anthropic"))
      const result = await client("anthropic", fetch).ask("go", { toolkit, onText: () => {} })
      expect(result.status).toBe("done")
      expect(result.toolCalls).toHaveLength(1)
      expect(result.toolCalls[0]?.isError).toBe(false)
      const sent = bodies[1].messages
      expect(sent.at(-1).content[0]).toMatchObject({
        type: "tool_result",
        tool_use_id: result.toolCalls[0]?.id,
      })
    }
  })

  it("max_tokens in the middle of a tool input: incomplete, the call is never run", async () => {
    let ran = 0
    const makeFile = defineTool({
      name: "make_file",
      description: "make a file",
      inputSchema: { type: "object" },
      run: () => {
        ran++
        return "made"
      },
    })
    const toolkit = await createToolkit({ extraTools: [makeFile] })
    const { fetch, bodies } = replay(sse("anthropic-max-tokens-tool-use.sse"))
    const result = await client("anthropic", fetch).ask("write", { toolkit, onText: () => {} })
    expect(result.status).toBe("incomplete")
    expect(result.limit).toBe("maxOutputTokens")
    expect(result.finishReason).toBe("length")
    expect(ran).toBe(0)
    expect(bodies).toHaveLength(1)
    expect(result.toolCalls).toEqual([])
  })

  it("an overloaded_error event before any output is retried; 529 and retry-after-ms are honoured", async () => {
    const overloaded =
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    const { fetch, bodies } = replay(
      { body: overloaded, sse: true },
      {
        status: 529,
        headers: { "retry-after-ms": "5" },
        body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
      },
      chunks("anthropic-text.chunks.txt", "anthropic"),
    )
    const events = await collect(client("anthropic", fetch).stream("hi"))
    expect(bodies).toHaveLength(3)
    expect((events.at(-1) as any).result.text.length).toBeGreaterThan(0)
  })

  it("x-should-retry: false on a 529 is final", async () => {
    const { fetch, bodies } = replay(
      { status: 529, headers: { "x-should-retry": "false" }, body: "{}" },
      { body: "{}" },
    )
    const error = await client("anthropic", fetch)
      .run("hi")
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LLMHttpError)
    expect((error as LLMHttpError).status).toBe(529)
    expect(bodies).toHaveLength(1)
  })
})

describe.each([
  ["chat", "openai"],
  ["responses", "openai-responses"],
  ["anthropic", "anthropic"],
] as const)("replayed Mirascope e2e cassettes (%s)", (prefix, style) => {
  const secrets: Record<string, string> = { mellon: "Welcome to Moria!", radiance: "Life before Death" }
  const secretTool = defineTool({
    name: "secret_retrieval_tool",
    description: "A tool that requires a password to retrieve a secret.",
    inputSchema: { type: "object", properties: { password: { type: "string" } }, required: ["password"] },
    run: ({ password }) => secrets[String(password)] ?? "Invalid password!",
  })

  it.each([false, true])(
    "parallel tool calls run, and their results go back in call order (stream: %s)",
    async (stream) => {
      const load = stream ? sse : json
      const ext = stream ? "sse" : "json"
      const { fetch, bodies } = replay(
        load(`mirascope-${prefix}-parallel-tools.1.${ext}`),
        load(`mirascope-${prefix}-parallel-tools.2.${ext}`),
      )
      const toolkit = await createToolkit({ extraTools: [secretTool] })
      const c = client(style, fetch)
      const result = stream
        ? (doneResult(await collect(c.stream("secrets for mellon and radiance", { toolkit }))) as RunResult)
        : await c.run("secrets for mellon and radiance", { toolkit })
      expect(result.status).toBe("done")
      expect(result.toolCalls.map((t) => [t.args, t.output])).toEqual([
        [{ password: "mellon" }, "Welcome to Moria!"],
        [{ password: "radiance" }, "Life before Death"],
      ])
      expect(result.text).toContain("Welcome to Moria!")
      expect(result.finishReason).toBe("stop")
      expect(transcriptProblems(result.messages)).toEqual([])
      // The second request carries both results, keyed by the recorded call ids.
      const ids = result.toolCalls.map((t) => t.id)
      expect(ids.every((id) => id.length > 8)).toBe(true)
      const sent = style === "openai-responses" ? bodies[1].input : bodies[1].messages
      const resultIds = sent.flatMap((m: any) =>
        m.type === "function_call_output"
          ? [m.call_id]
          : m.role === "tool"
            ? [m.tool_call_id]
            : Array.isArray(m.content)
              ? m.content.filter((b: any) => b.type === "tool_result").map((b: any) => b.tool_use_id)
              : [],
      )
      expect(resultIds).toEqual(ids)
    },
  )

  it.each([false, true])("the output-token limit ends the run incomplete (stream: %s)", async (stream) => {
    const recorded = stream
      ? sse(`mirascope-${prefix}-max-tokens.sse`)
      : json(`mirascope-${prefix}-max-tokens.json`)
    const c = client(style, replay(recorded).fetch)
    const result = stream
      ? (doneResult(await collect(c.stream("List all U.S. states."))) as RunResult)
      : await c.run("List all U.S. states.")
    expect([result.status, result.limit, result.finishReason]).toEqual([
      "incomplete",
      "maxOutputTokens",
      "length",
    ])
    expect(result.text).toContain("Alabama")
  })
})

describe.each([
  ["chat", "openai"],
  ["responses", "openai-responses"],
] as const)("replayed Mirascope refusals (%s)", (prefix, style) => {
  it("a streamed refusal: refusal events, finishReason refusal", async () => {
    const events = await collect(
      client(style, replay(sse(`mirascope-${prefix}-refusal.sse`)).fetch).stream("x"),
    )
    const result = doneResult(events)
    expect([result.status, result.finishReason]).toEqual(["done", "refusal"])
    expect(result.refusal).toMatch(/^I'm (very )?sorry, (but )?I can't assist with that/)
    expect(texts(events, "refusal")).toBe(result.refusal)
    expect(result.text).toBe("")
  })

  it("a non-streamed refusal: refusal on the result, the provider's shape in the transcript", async () => {
    const result = await client(style, replay(json(`mirascope-${prefix}-refusal.json`)).fetch).run("x")
    const recorded = JSON.parse(read(`mirascope-${prefix}-refusal.json`))
    if (style === "openai") {
      // finish_reason is "stop": the refusal field decides.
      const message = recorded.choices[0].message
      expect(recorded.choices[0].finish_reason).toBe("stop")
      expect([result.finishReason, result.refusal]).toEqual(["refusal", message.refusal])
      expect(result.messages.at(-1)).toEqual({ role: "assistant", content: null, refusal: message.refusal })
    } else {
      expect([result.finishReason, result.refusal]).toEqual([
        "refusal",
        recorded.output[0].content[0].refusal,
      ])
      expect(result.messages.at(-1)).toEqual(recorded.output[0])
    }
  })
})
