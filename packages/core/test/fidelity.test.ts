import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { type GenerateReply, createInProcessClient } from "../src/client/in-process-client.js"
import type { StreamEvent } from "../src/client/run-result.js"
import { createClient } from "../src/client/create-client.js"
import { ConfigError, LLMHttpError, LLMStreamError, ToolnexusError } from "../src/errors.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import { transcriptProblems } from "../src/testing/index.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

function countingEcho() {
  const seen: unknown[] = []
  const tool = defineTool({
    name: "echo",
    description: "Echo text",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    run: (args) => {
      seen.push(args)
      return `echo: ${args.text}`
    },
  })
  return { seen, tool }
}

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = []
  for await (const ev of events) out.push(ev)
  return out
}

const doneOf = (events: StreamEvent[]) => (events.at(-1) as Extract<StreamEvent, { type: "done" }>).result

describe.each(STYLES)("finish reasons and cut-offs (%s)", (style) => {
  it("a final answer is done with finishReason stop; a tool turn reports tool_calls while halted", async () => {
    const { server } = ctx
    server.enqueue({ text: "hello" })
    const result = await clientFor(style, server).run("hi")
    expect([result.status, result.finishReason, result.refusal]).toEqual(["done", "stop", undefined])
  })

  it("a reply cut at the token limit is incomplete/maxOutputTokens and its tool calls never run", async () => {
    const { server } = ctx
    const { seen, tool } = countingEcho()
    const toolkit = await createToolkit({ extraTools: [tool] })
    for (const id of ["cut1", "cut2"])
      server.enqueue({
        text: '{"',
        toolCalls: [{ id, name: "echo", arguments: { text: "x" } }],
        cutOff: "maxOutputTokens",
      })
    const plain = await clientFor(style, server).run("write json", { toolkit })
    expect(plain.status).toBe("incomplete")
    expect(plain.limit).toBe("maxOutputTokens")
    expect(plain.finishReason).toBe("length")
    expect(plain.text).toBe('{"')
    expect(plain.toolCalls).toEqual([])
    expect(seen).toEqual([])
    expect(server.requests).toHaveLength(1)
    // The unexecuted call still gets a result, so the transcript can be sent again.
    expect(transcriptProblems(plain.messages)).toEqual([])
    const streamed = doneOf(await collect(clientFor(style, server).stream("write json", { toolkit })))
    expect([streamed.status, streamed.limit]).toEqual(["incomplete", "maxOutputTokens"])
    expect(seen).toEqual([])
  })

  it("a content filter ends the run incomplete (OpenAI styles) — never done", async () => {
    const { server } = ctx
    server.enqueue({ text: "partial", cutOff: "contentFilter" })
    const result = await clientFor(style, server).run("hi")
    if (style === "anthropic") {
      // Anthropic has no content-filter stop; its policy stop is a refusal.
      expect([result.status, result.finishReason]).toEqual(["done", "refusal"])
    } else {
      expect([result.status, result.limit, result.finishReason]).toEqual([
        "incomplete",
        "contentFilter",
        "content_filter",
      ])
    }
  })

  it("a refusal: done, finishReason refusal, refusal text, stream refusal events, provider shape kept", async () => {
    const { server } = ctx
    server.enqueue({ refusal: "I can't help with that." }, { refusal: "I can't help with that." })
    const result = await clientFor(style, server).run("bad")
    const expected = style === "anthropic" ? "" : "I can't help with that."
    expect([result.status, result.finishReason, result.refusal, result.text]).toEqual([
      "done",
      "refusal",
      expected,
      "",
    ])
    if (style === "openai")
      expect(result.messages.at(-1)).toEqual({ role: "assistant", content: null, refusal: expected })
    if (style === "openai-responses")
      expect(result.messages.at(-1)).toMatchObject({
        type: "message",
        role: "assistant",
        content: [{ type: "refusal", refusal: expected }],
      })
    const events = await collect(clientFor(style, server).stream("bad"))
    const deltas = events.filter((e) => e.type === "refusal").map((e) => (e as { delta: string }).delta)
    expect(deltas.join("")).toBe(expected)
    if (style !== "anthropic") expect(deltas.length).toBeGreaterThan(1)
    expect(doneOf(events).refusal).toBe(expected)
    expect(events.some((e) => e.type === "text")).toBe(false)
  })

  it("the finish reason of a later turn replaces the earlier one; a refusal does not linger", async () => {
    const { server } = ctx
    const { tool } = countingEcho()
    server.enqueue({ toolCalls: [{ name: "echo", arguments: { text: "a" } }] }, { text: "fine" })
    const toolkit = await createToolkit({ extraTools: [tool] })
    const result = await clientFor(style, server).run("go", { toolkit })
    expect([result.finishReason, result.turns]).toEqual(["stop", 2])
  })
})

describe.each(STYLES)("retries (%s)", (style) => {
  it.each([408, 409, 529])("retries HTTP %i", async (status) => {
    const { server } = ctx
    server.enqueue({ status, headers: { "retry-after": "0" } }, { text: "ok" })
    expect((await clientFor(style, server).run("hi")).text).toBe("ok")
    expect(server.requests).toHaveLength(2)
  })

  it("x-should-retry overrides the status both ways", async () => {
    const { server } = ctx
    server.enqueue({ status: 400, headers: { "x-should-retry": "true" } }, { text: "ok" })
    expect((await clientFor(style, server).run("hi")).text).toBe("ok")
    server.reset()
    server.enqueue({ status: 503, headers: { "x-should-retry": "false" } }, { text: "never" })
    const error = await clientFor(style, server)
      .run("hi")
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LLMHttpError)
    expect(server.requests).toHaveLength(1)
  })

  it("retry-after-ms is honoured, and the cap bounds it", async () => {
    const { server } = ctx
    server.enqueue({ status: 429, headers: { "retry-after-ms": "200" } }, { text: "ok" })
    let started = performance.now()
    await clientFor(style, server).run("hi")
    expect(performance.now() - started).toBeGreaterThanOrEqual(180)
    server.reset()
    server.enqueue({ status: 429, headers: { "retry-after": "3600" } }, { text: "ok" })
    started = performance.now()
    await clientFor(style, server, { maxRetryDelayMs: 20 }).run("hi")
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  it("a transient stream error before output is retried; a permanent one fails at once", async () => {
    const { server } = ctx
    server.enqueue(
      { streamError: { type: "overloaded_error", message: "Overloaded" } },
      { text: "recovered" },
    )
    const events = await collect(clientFor(style, server).stream("hi"))
    expect(doneOf(events).text).toBe("recovered")
    expect(server.requests).toHaveLength(2)
    server.reset()
    server.enqueue({ streamError: { type: "invalid_request_error", message: "bad" } }, { text: "never" })
    const error = await collect(clientFor(style, server).stream("hi")).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LLMStreamError)
    expect((error as LLMStreamError).errorType).toBe("invalid_request_error")
    expect(server.requests).toHaveLength(1)
  })
})

describe.each(STYLES)("structured output (%s)", (style) => {
  const Weather = z.object({ city: z.string(), celsius: z.number() })

  it("sends the style's format and returns the parsed, typed value", async () => {
    const { server } = ctx
    server.enqueue({ text: '{"city":"Oslo","celsius":-3}' })
    const result = await clientFor(style, server).run("weather", { output: Weather })
    const city: string | undefined = result.output?.city
    expect(city).toBe("Oslo")
    expect(result.output).toEqual({ city: "Oslo", celsius: -3 })
    const body = server.requests[0]?.body
    const schema = expect.objectContaining({ type: "object", required: ["city", "celsius"] })
    if (style === "openai")
      expect(body.response_format).toEqual({
        type: "json_schema",
        json_schema: { name: "output", schema, strict: true },
      })
    if (style === "openai-responses")
      expect(body.text.format).toEqual({ type: "json_schema", name: "output", schema, strict: true })
    if (style === "anthropic") expect(body.output_config).toEqual({ format: { type: "json_schema", schema } })
  })

  it("an invalid answer gets one corrective turn", async () => {
    const { server } = ctx
    server.enqueue({ text: '{"city":"Oslo"}' }, { text: '{"city":"Oslo","celsius":2}' })
    const result = await clientFor(style, server).ask("weather", { output: Weather })
    expect(result.status).toBe("done")
    expect(result.output).toEqual({ city: "Oslo", celsius: 2 })
    expect(result.turns).toBe(2)
    expect(server.requests[1]?.lastUserText).toMatch(/does not match the required JSON schema: celsius/)
  })

  it("still invalid after the corrective turn ⇒ incomplete/invalidOutput; JSON Schema works too", async () => {
    const { server } = ctx
    server.enqueue({ text: "not json" }, { text: '{"n":"x"}' })
    const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"] }
    const result = await clientFor(style, server).run("n?", { output: schema })
    expect([result.status, result.limit, result.output]).toEqual(["incomplete", "invalidOutput", undefined])
    expect(server.requests).toHaveLength(2)
  })

  it("a schema that is neither Zod nor a valid JSON Schema is a ConfigError, before any request", async () => {
    const client = clientFor(style, ctx.server)
    expect(() => client.run("x", { output: "nope" as never })).toThrow(ConfigError)
    expect(() => client.run("x", { output: { type: "object", properties: { n: { type: 5 } } } })).toThrow(
      /output: invalid JSON Schema at #\/properties\/n\/type/,
    )
    expect(ctx.server.requests).toHaveLength(0)
  })
})

describe.each(STYLES)("multimodal prompts (%s)", (style) => {
  it("writes text, image URL, base64 image and file parts in the style's own shape", async () => {
    const { server } = ctx
    server.enqueue({ text: "a cat" })
    await clientFor(style, server).run([
      { type: "text", text: "What is this?" },
      { type: "image", url: "https://example.com/cat.png" },
      { type: "image", data: "aGVsbG8=", mediaType: "image/png" },
      { type: "file", data: "JVBERg==", mediaType: "application/pdf", filename: "a.pdf" },
    ])
    const body = server.requests[0]?.body
    const content = (style === "openai-responses" ? body.input : body.messages).at(-1).content
    const expected = {
      openai: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
        { type: "image_url", image_url: { url: "data:image/png;base64,aGVsbG8=" } },
        { type: "file", file: { file_data: "data:application/pdf;base64,JVBERg==", filename: "a.pdf" } },
      ],
      anthropic: [
        { type: "text", text: "What is this?" },
        { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
        { type: "image", source: { type: "base64", media_type: "image/png", data: "aGVsbG8=" } },
        {
          type: "document",
          source: { type: "base64", media_type: "application/pdf", data: "JVBERg==" },
          title: "a.pdf",
        },
      ],
      "openai-responses": [
        { type: "input_text", text: "What is this?" },
        { type: "input_image", image_url: "https://example.com/cat.png" },
        { type: "input_image", image_url: "data:image/png;base64,aGVsbG8=" },
        { type: "input_file", file_data: "data:application/pdf;base64,JVBERg==", filename: "a.pdf" },
      ],
    }[style]
    expect(content).toEqual(expected)
    expect(server.requests[0]?.lastUserText).toBe("What is this?")
  })

  it("a malformed part is a ConfigError naming it, before anything is sent", async () => {
    const { server } = ctx
    const client = clientFor(style, server)
    expect(() => client.run([{ type: "text", text: "a" }, { type: "image" } as never])).toThrow(
      /prompt part 1/,
    )
    expect(() => client.run([{ type: "video" } as never])).toThrow(ConfigError)
    expect(server.requests).toHaveLength(0)
  })
})

describe.each(STYLES)("header redaction (%s)", (style) => {
  it("no value of a user-passed header appears in an error, even when the endpoint echoes it", async () => {
    const { server } = ctx
    const cookie = "session=s3cr3t-cookie-value; theme=dark-mode"
    server.enqueue({
      status: 400,
      text: `rejected: cookie ${cookie}, tenant acme-tenant-7, s3cr3t-cookie-value`,
    })
    const infos: unknown[] = []
    const error = await clientFor(style, server, {
      headers: { Cookie: cookie, "X-Tenant": "acme-tenant-7" },
      onError: (info) => {
        infos.push(info.error)
        return "fail"
      },
    })
      .run("hi")
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LLMHttpError)
    for (const e of [error, ...infos]) {
      const text = `${(e as Error).message} ${(e as LLMHttpError).bodyExcerpt} ${(e as Error).stack}`
      for (const secret of ["s3cr3t-cookie-value", "acme-tenant-7", "dark-mode"])
        expect(text).not.toContain(secret)
      expect(text).toContain("[redacted]")
    }
  })
})

describe("Anthropic pause_turn", () => {
  const paused = {
    id: "msg_p1",
    type: "message",
    role: "assistant",
    model: "m",
    content: [
      { type: "text", text: "Searching. " },
      { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "weather" } },
      { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] },
    ],
    stop_reason: "pause_turn",
    usage: { input_tokens: 5, output_tokens: 5 },
  }

  it("sends the paused turn back to be continued; the continuation counts as a turn and text joins", async () => {
    const { server } = ctx
    server.enqueue({ rawBody: JSON.stringify(paused) }, { text: "It is sunny." })
    const result = await clientFor("anthropic", server).run("weather?")
    expect(result.status).toBe("done")
    expect(result.text).toBe("Searching. It is sunny.")
    expect(result.turns).toBe(2)
    expect(result.finishReason).toBe("stop")
    expect(server.requests[1]?.body.messages.at(-1)).toEqual({ role: "assistant", content: paused.content })
  })

  it("counts against maxTurns", async () => {
    const { server } = ctx
    server.enqueue({ rawBody: JSON.stringify(paused) }, { text: "never" })
    const result = await clientFor("anthropic", server, { maxTurns: 1 }).run("weather?")
    expect([result.status, result.limit, result.finishReason]).toEqual(["incomplete", "maxTurns", "pause"])
    expect(server.requests).toHaveLength(1)
  })
})

describe("in-process models", () => {
  it("report refusals and finish reasons like the wire styles", async () => {
    const replies: GenerateReply[] = [
      { refusal: "No." },
      { content: "cut", toolCalls: [{ name: "echo", arguments: { text: "x" } }], finishReason: "length" },
    ]
    const client = createInProcessClient({ model: "scripted", generate: async () => replies.shift() ?? {} })
    const { seen, tool } = countingEcho()
    const toolkit = await createToolkit({ extraTools: [tool] })
    const refused = await client.run("bad")
    expect([refused.status, refused.finishReason, refused.refusal]).toEqual(["done", "refusal", "No."])
    expect(refused.messages.at(-1)).toEqual({ role: "assistant", content: null, refusal: "No." })
    const cut = await client.run("long", { toolkit })
    expect([cut.status, cut.limit, cut.finishReason]).toEqual(["incomplete", "maxOutputTokens", "length"])
    expect(seen).toEqual([])
  })
})

describe("a connection lost in the middle of a stream", () => {
  /** A server whose first answer sends `frames` and then drops the socket; later ones finish. */
  async function droppingServer(frames: string) {
    let count = 0
    const server = createServer((_req, res) => {
      count++
      res.writeHead(200, { "content-type": "text/event-stream" })
      if (count === 1) {
        res.write(frames, () => setTimeout(() => res.socket?.destroy(), 20))
        return
      }
      const chunk = (delta: unknown, finish: string | null = null) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
      res.end(`${chunk({ content: "fine" })}${chunk({}, "stop")}data: [DONE]\n\n`)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
    return { url, requests: () => count, close: () => new Promise((r) => server.close(r)) }
  }

  it("before any output is retried; after output it fails without repeating the text", async () => {
    const quiet = await droppingServer(": nothing yet\n\n")
    try {
      const client = createClient({ baseUrl: quiet.url, style: "openai", model: "m", retryBaseMs: 1 })
      const events = await collect(client.stream("hi"))
      expect(doneOf(events).text).toBe("fine")
      expect(quiet.requests()).toBe(2)
    } finally {
      await quiet.close()
    }
    const talking = await droppingServer(
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "Hel" }, finish_reason: null }] })}\n\n`,
    )
    try {
      const client = createClient({ baseUrl: talking.url, style: "openai", model: "m", retryBaseMs: 1 })
      const events: StreamEvent[] = []
      const error = await (async () => {
        for await (const ev of client.stream("hi")) events.push(ev)
      })().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ToolnexusError)
      expect(events).toEqual([{ type: "text", delta: "Hel" }])
      expect(talking.requests()).toBe(1)
    } finally {
      await talking.close()
    }
  })
})
