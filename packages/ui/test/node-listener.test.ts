import { createServer, request as httpRequest } from "node:http"
import { type AddressInfo, connect } from "node:net"
import { type Client, type StreamEvent, createToolkit } from "@toolnexus/core"
import { createMemoryStore } from "@toolnexus/durable"
import { describe, expect, it } from "vitest"
import { createAgUiHandler } from "../src/ag-ui/index.js"
import { createChatHandler } from "../src/ai-sdk/index.js"
import { toNodeListener } from "../src/index.js"
import {
  EDGES,
  chunksOf,
  clientOf,
  postRaw,
  refundTools,
  script,
  serve,
  useFakeModel,
  userMessage,
} from "./helpers.js"

const env = useFakeModel("node")

let counter = 0
const chatId = () => `node-${++counter}-${Date.now()}`
const turnBody = (id: string, text = "hi") => ({
  id,
  messages: [userMessage(text)],
  trigger: "submit-message",
})

/** Resolves when `check` holds; polls without assuming a speed (the suite's timeout bounds it). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 5))
}

/**
 * A client whose `ask` streams what the test feeds it: `emit` sends events, `finish` ends the
 * run. The transcript store is a real client's durable memory store: the handler's store host
 * runs over it (a hand-made client cannot be moved onto one, as `createClient`'s are).
 */
function steeredClient() {
  const real = clientOf(env.fake, createMemoryStore())
  let onEvent: (ev: StreamEvent) => void = () => {}
  let finish: () => void = () => {}
  let asked = false
  const client = {
    conversationStore: () => real.conversationStore(),
    ask: (_prompt: unknown, opts: { onEvent: (ev: StreamEvent) => void }) => {
      onEvent = opts.onEvent
      asked = true
      return new Promise((resolve) => {
        finish = () => resolve({ status: "done", finishReason: "stop" })
      })
    },
  } as unknown as Client
  return {
    client,
    asked: () => asked,
    emit: (ev: StreamEvent) => onEvent(ev),
    finish: () => finish(),
  }
}

/**
 * A response's status, headers (the per-response `date` left out) and body bytes, with the ids
 * that differ between two runs of one script (request ids, the fake model's call counter,
 * AG-UI message ids — time and a counter shared by the module, both base 36 — and new
 * assistant message uuids) set to `…`.
 */
async function wireOf(res: Response) {
  const headers = Object.fromEntries([...res.headers].filter(([k]) => k !== "date"))
  const body = Buffer.from(await res.arrayBuffer())
    .toString("utf8")
    .replace(/pnd-[A-Za-z0-9_-]{22}/g, "pnd-…")
    .replace(/call_fake\d+/g, "call_fake…")
    .replace(/msg-[0-9a-f-]{36}|msg-[a-z0-9]+-[a-z0-9]+/g, "msg-…")
  return { status: res.status, headers, body }
}

describe("toNodeListener's fast path (a handler of this package on node:http)", () => {
  it("streams incrementally: the first chunk arrives while the run is still going", async () => {
    const steered = steeredClient()
    const server = await serve(createChatHandler({ client: steered.client }))
    const posted = postRaw(server.url, turnBody(chatId()))
    // The reply starts with the run's first event (a claim refused before it is still a 409).
    await until(steered.asked)
    steered.emit({ type: "text", delta: "early" } as StreamEvent)
    const res = await posted
    expect(res.status).toBe(200)
    expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1")
    const reader = res.body!.getReader()
    let seen = ""
    while (!seen.includes('"delta":"early"')) {
      const { value, done } = await reader.read()
      expect(done).toBe(false)
      seen += Buffer.from(value!).toString("utf8")
    }
    // The run has not finished: no finish chunk yet.
    expect(seen).not.toContain('"type":"finish"')
    steered.emit({ type: "turn", turn: 1, finishReason: "stop" } as StreamEvent)
    steered.finish()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      seen += Buffer.from(value).toString("utf8")
    }
    expect(seen.endsWith('data: {"type":"finish","finishReason":"stop"}\n\ndata: [DONE]\n\n')).toBe(true)
    await server.close()
  })

  it("a turn's frames leave in two writes: the headers with the first tick's frames, the last tick's with [DONE] and the end", async () => {
    const steered = steeredClient()
    const server = await serve(createChatHandler({ client: steered.client }))
    const { hostname, port } = new URL(server.url)
    const socket = connect(Number(port), hostname)
    let received = ""
    socket.setEncoding("latin1")
    socket.on("data", (data: string) => {
      received += data
    })
    const body = JSON.stringify(turnBody(chatId()))
    socket.write(
      `POST /api/chat HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
    )
    await until(steered.asked)
    // One tick: two deltas, with promise jobs between them (the frames still leave together).
    steered.emit({ type: "text", delta: "a" } as StreamEvent)
    await Promise.resolve()
    steered.emit({ type: "text", delta: "b" } as StreamEvent)
    await until(() => received.includes('"delta":"b"'))
    // The last tick: a delta, the turn's end, the run's `done` and its end.
    steered.emit({ type: "text", delta: "c" } as StreamEvent)
    steered.emit({ type: "turn", turn: 1, finishReason: "stop" } as StreamEvent)
    steered.emit({ type: "done", result: { status: "done", finishReason: "stop" } } as unknown as StreamEvent)
    steered.finish()
    await until(() => received.endsWith("\r\n0\r\n\r\n"))
    socket.destroy()
    // The chunked body's chunks, one per write.
    const chunks: string[] = []
    let rest = received.slice(received.indexOf("\r\n\r\n") + 4)
    for (;;) {
      const size = Number.parseInt(rest.slice(0, rest.indexOf("\r\n")), 16)
      if (size === 0) break
      const start = rest.indexOf("\r\n") + 2
      chunks.push(rest.slice(start, start + size))
      rest = rest.slice(start + size + 2)
    }
    expect(chunks).toHaveLength(2)
    expect(chunks[0]).toMatch(/^data: \{"type":"start","messageId":"msg-[^"]+"\}\n\n/)
    expect(chunks[0]).toContain('"delta":"b"')
    expect(chunks[1]).toMatch(/^data: \{"type":"text-delta","id":"text-1","delta":"c"\}\n\n/)
    expect(chunks[1]?.endsWith('data: {"type":"finish","finishReason":"stop"}\n\ndata: [DONE]\n\n')).toBe(
      true,
    )
    await server.close()
  })

  it("a client that goes away stops the writing, never the run: the approved tool runs once and the final text is stored", async () => {
    const client = clientOf(env.fake)
    const { effects, tools } = refundTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const server = await serve(createChatHandler({ client, toolkit }))
    const id = chatId()
    const card = await chunksOf(await postRaw(server.url, turnBody(id, "refund please")))
    const ask = card.find((c) => c.type === "tool-approval-request") as { approvalId: string }
    // The resumed run's final LLM reply waits, so the client can leave mid-stream.
    script.finalDelayMs = 300
    const leaving = new AbortController()
    const res = await fetch(`${server.url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        id,
        messages: [],
        trigger: "submit-message",
        answer: { id: ask.approvalId, ok: true },
      }),
      signal: leaving.signal,
    })
    const reader = res.body!.getReader()
    let seen = ""
    while (!seen.includes("tool-output-available"))
      seen += Buffer.from((await reader.read()).value!).toString()
    leaving.abort()
    await reader.read().catch(() => undefined)
    await until(async () => {
      const stored = (await client.conversationStore().get(id)) ?? []
      return JSON.stringify(stored.at(-1)).includes("Done: refunded 30 EUR on A1")
    })
    expect(effects).toHaveLength(1)
    expect(await client.conversationStore().getPending?.(id)).toBeUndefined()
    await server.close()
  })

  it("a full socket is waited on: no write between a write that returned false and the next drain", async () => {
    const steered = steeredClient()
    const listener = toNodeListener(createChatHandler({ client: steered.client }))
    const log: string[] = []
    const server = createServer((req, res) => {
      const write = res.write.bind(res) as (chunk: Uint8Array) => boolean
      res.write = ((chunk: Uint8Array) => {
        const ok = write(chunk)
        log.push(ok ? "write" : "full")
        return ok
      }) as typeof res.write
      res.on("drain", () => log.push("drain"))
      listener(req, res)
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const { port } = server.address() as AddressInfo
    const body = JSON.stringify(turnBody(chatId()))
    const delta = "x".repeat(64 * 1024)
    let emitted = false
    const received = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        {
          port,
          host: "127.0.0.1",
          method: "POST",
          path: "/api/chat",
          headers: { "content-type": "application/json" },
        },
        (res) => {
          // Not read until the run has emitted everything: the socket fills meanwhile.
          res.pause()
          const parts: Buffer[] = []
          res.on("data", (c: Buffer) => parts.push(c))
          res.on("end", () => resolve(Buffer.concat(parts).toString("utf8")))
          res.on("error", reject)
          void until(() => emitted).then(() => res.resume())
        },
      )
      req.on("error", reject)
      req.end(body)
      void until(steered.asked).then(async () => {
        // One frame a tick: frames keep coming while the socket is full.
        for (let i = 0; i < 128; i++) {
          steered.emit({ type: "text", delta } as StreamEvent)
          await new Promise((r) => setImmediate(r))
        }
        steered.emit({ type: "turn", turn: 1, finishReason: "stop" } as StreamEvent)
        steered.finish()
        emitted = true
      })
    })
    expect(log).toContain("full")
    // Frames came while it was full: fewer writes than frames (the queued ones left as one).
    expect(log.filter((e) => e !== "drain").length).toBeLessThan(128)
    for (let i = log.indexOf("full"); i !== -1 && i < log.length - 1; i = log.indexOf("full", i + 1))
      expect(log[i + 1]).toBe("drain")
    // Every delta arrived, in order, and the stream ended properly.
    expect(received.split(delta).length - 1).toBe(128)
    expect(received.endsWith("data: [DONE]\n\n")).toBe(true)
    await new Promise<void>((r) => {
      server.closeAllConnections()
      server.close(() => r())
    })
  })
})

describe("the fast path sends what the Fetch path sends: status, headers, bytes", () => {
  /** Serves `make()` on both edges and sends `send(url)` to each. */
  async function both(
    make: () => (req: Request) => Promise<Response>,
    send: (url: string) => Promise<Response>,
  ) {
    const out = []
    for (const edge of EDGES) {
      const server = await serve(make(), edge)
      out.push(await wireOf(await send(server.url)))
      await server.close()
    }
    return out
  }

  it("a scripted AI SDK turn, an approval card, and the refusals (400, 405, 409, 204)", async () => {
    const { tools } = refundTools()
    const toolkit = await createToolkit({ extraTools: tools })
    const make = () => createChatHandler({ client: clientOf(env.fake), toolkit })
    const cases: [string, (url: string) => Promise<Response>][] = [
      ["turn", (url) => postRaw(url, turnBody("same-chat"))],
      ["not JSON", (url) => postRaw(url, "{nope")],
      ["no messages", (url) => postRaw(url, { id: "x", messages: [], trigger: "submit-message" })],
      ["PUT", (url) => fetch(`${url}/api/chat`, { method: "PUT", body: "{}" })],
      ["no stream", (url) => fetch(`${url}/api/chat/none/stream`)],
      [
        "pending",
        async (url) => {
          await (await postRaw(url, turnBody("parked", "refund please"))).text()
          return postRaw(url, turnBody("parked", "and again"))
        },
      ],
    ]
    for (const [name, send] of cases) {
      const [fetched, node] = await both(make, send)
      expect(node, name).toEqual(fetched)
    }
  })

  it("a scripted AG-UI run and a RUN_ERROR", async () => {
    const make = () => createAgUiHandler({ client: clientOf(env.fake) })
    const input = (threadId: string, messages: unknown[]) => ({
      threadId,
      runId: "run-1",
      messages,
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    })
    const agent = (body: unknown) => (url: string) =>
      fetch(`${url}/agent`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify(body),
      })
    const run = await both(make, agent(input("t-same", [{ id: "m1", role: "user", content: "hi" }])))
    expect(run[1]).toEqual(run[0])
    expect(run[0]?.body).toContain('"type":"RUN_FINISHED"')
    const refused = await both(make, agent(input("t-none", [{ id: "m1", role: "assistant", content: "hi" }])))
    expect(refused[1]).toEqual(refused[0])
    expect(refused[0]?.body).toContain('"type":"RUN_ERROR"')
  })
})
