import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Client, createClient, defineTool, pending, relayTool } from "@toolnexus/core"
import type { ConversationStore } from "@toolnexus/core"
import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  type UIMessage,
  type UIMessageChunk,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from "ai"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { toNodeListener } from "../src/index.js"
import { refundTool } from "./fixtures/refund-tool.mjs"

/**
 * The scripted model and a scratch folder for one test file: the server starts before the
 * file's tests, is re-scripted before each test and stops, with the folder, after them.
 * `stores` are the two stores every rule is checked on (the memory store, a SQLite file).
 */
export function useFakeModel(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `tnx-ui-${name}-`))
  let count = 0
  const env = {
    fake: undefined as unknown as FakeLLMServer,
    dir,
    /** A fresh SQLite file in the folder. */
    sqlite: () => new SqliteStore({ path: join(dir, `${name}-${++count}.db`) }),
    stores: [] as [string, () => ConversationStore | undefined][],
    /** Each store served through each edge: `[store name, edge, make store]`. */
    cases: [] as [string, Edge, () => ConversationStore | undefined][],
  }
  env.stores = [
    ["memory", () => undefined],
    ["sqlite", () => env.sqlite()],
  ]
  env.cases = env.stores.flatMap(([name, make]) =>
    EDGES.map((edge) => [name, edge, make] as [string, Edge, typeof make]),
  )
  beforeAll(async () => {
    env.fake = await createFakeLLMServer()
  })
  beforeEach(() => {
    env.fake.reset()
    scriptModel(env.fake)
  })
  afterAll(async () => {
    await env.fake?.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return env
}

/** Reads a UI message stream response with the `ai` package's own parser and schema. */
export async function chunksOf(response: Response): Promise<UIMessageChunk[]> {
  const out: UIMessageChunk[] = []
  const parsed = parseJsonEventStream({ stream: response.body!, schema: uiMessageChunkSchema })
  for await (const chunk of parsed as unknown as AsyncIterable<{
    success: boolean
    value: UIMessageChunk
    error?: unknown
  }>) {
    if (!chunk.success) throw chunk.error
    out.push(chunk.value)
  }
  return out
}

/** The assistant message the `ai` package builds from chunks (continuing `message` when given). */
export async function messageOf(chunks: UIMessageChunk[], message?: UIMessage): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk)
      c.close()
    },
  })
  let built: UIMessage | undefined
  for await (const m of readUIMessageStream({
    stream,
    terminateOnError: true,
    ...(message ? { message } : {}),
  }))
    built = m
  if (!built) throw new Error("no message")
  return built
}

/** The assistant message with its card answered, as `addToolApprovalResponse` leaves it. */
export function responded(assistant: UIMessage, approved: boolean): UIMessage {
  return {
    ...assistant,
    parts: assistant.parts.map((p) => {
      const part = p as Record<string, unknown>
      if (part.state !== "approval-requested") return p
      return {
        ...part,
        state: "approval-responded",
        approval: { ...(part.approval as object), approved },
      } as never
    }),
  }
}

/** The JSON error body of a refusal. */
export async function errorOf(res: Response) {
  return ((await res.json()) as { error: Record<string, unknown> & { code: string; message: string } }).error
}

/** The `ai` package's headless chat: a plain in-memory `ChatState`, as `Chat` in React would keep. */
class MemoryChatState implements ChatState<UIMessage> {
  status: ChatStatus = "ready"
  error: Error | undefined = undefined
  messages: UIMessage[] = []
  pushMessage = (m: UIMessage) => {
    this.messages = [...this.messages, m]
  }
  popMessage = () => {
    this.messages = this.messages.slice(0, -1)
  }
  replaceMessage = (i: number, m: UIMessage) => {
    this.messages = this.messages.map((old, j) => (j === i ? m : old))
  }
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

type ChatInit = Omit<ConstructorParameters<typeof AbstractChat<UIMessage>>[0], "state">

export class TestChat extends AbstractChat<UIMessage> {
  constructor(init: ChatInit) {
    super({ ...init, state: new MemoryChatState() })
  }
}

/** A chat of the real `ai` client against `url`, approvals and tool outputs sent automatically. */
export function chatAt(url: string, id: string, extra: Partial<ChatInit> = {}) {
  const errors: Error[] = []
  const chat = new TestChat({
    id,
    transport: new DefaultChatTransport({ api: `${url}/api/chat` }),
    onError: (e) => errors.push(e),
    ...extra,
  })
  return { chat, errors }
}

/** Waits until the chat has no request in flight (automatic sends included). */
export async function settled(chat: AbstractChat<UIMessage>): Promise<void> {
  for (let quiet = 0; quiet < 3; ) {
    await new Promise((r) => setTimeout(r, 5))
    quiet = chat.status === "ready" || chat.status === "error" ? quiet + 1 : 0
  }
}

/**
 * How a handler is served on node:http: `node listener` is `toNodeListener`'s fast path (the
 * handler's logic on the `IncomingMessage`, frames written to the `ServerResponse`); `fetch
 * handler` hides the handler behind a plain function, so the listener takes its Fetch path
 * (a `Request` in, the handler's own `Response` streamed out), as any fetch framework would.
 */
export type Edge = "fetch handler" | "node listener"
export const EDGES: Edge[] = ["fetch handler", "node listener"]

/** Serves a fetch handler on 127.0.0.1 through `edge`; `close` stops it. */
export async function serve(handler: (req: Request) => Promise<Response>, edge: Edge = "node listener") {
  const served = edge === "node listener" ? handler : (req: Request) => handler(req)
  const server = createServer(toNodeListener(served))
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

/** The refund tool: needs an approval; records each effect by idempotency key. */
export function refundTools() {
  const effects: string[] = []
  const refund = refundTool((effect) => effects.push(effect))
  const askEmail = defineTool({
    name: "ask_email",
    description: "Asks the user for an e-mail address",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) =>
      ctx?.answer?.ok
        ? `email: ${String(ctx.answer.data?.email)}`
        : pending({
            kind: "input",
            prompt: "Which e-mail address?",
            data: { schema: { type: "object", properties: { email: { type: "string" } } } },
          }),
  })
  const quote = defineTool({
    name: "quote",
    description: "Offers a quote that had to be accepted long ago",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) =>
      ctx?.answer?.ok
        ? "accepted"
        : pending({ kind: "approval", prompt: "Accept the quote?", expiresAt: "2000-01-01T00:00:00Z" }),
  })
  const locate = relayTool("locate", "Where the user's browser is", { type: "object", properties: {} })
  return { effects, tools: [refund, askEmail, locate, quote] }
}

/** Knobs of the scripted model: `finalDelayMs` slows the reply after tool results. */
export const script = { finalDelayMs: 0 }

/** The fake model's script: each prompt word picks a tool, tool results get a final text. */
export function scriptModel(server: FakeLLMServer): void {
  script.finalDelayMs = 0
  server.addRule({
    match: (req: FakeRequestView) => req.toolResults.length > 0,
    reply: (req) => ({
      text: `Done: ${req.toolResults.map((r) => r.content).join(" | ")}`,
      ...(script.finalDelayMs > 0 ? { delayMs: script.finalDelayMs } : {}),
    }),
  })
  server.addRule({ match: "quote", reply: { toolCalls: [{ name: "quote", arguments: {} }] } })
  server.addRule({ match: "slow", reply: { text: "Slowly.", delayMs: 300 } })
  server.addRule({
    match: "refund",
    reply: { toolCalls: [{ name: "refund", arguments: { orderId: "A1", amount: 30 } }] },
  })
  server.addRule({ match: "email", reply: { toolCalls: [{ name: "ask_email", arguments: {} }] } })
  server.addRule({ match: "where", reply: { toolCalls: [{ name: "locate", arguments: {} }] } })
  server.addRule({ match: "think", reply: { text: "Thought about it." } })
  server.addRule({ match: /.*/, reply: { text: "Hello there." } })
}

export function clientOf(server: FakeLLMServer, store?: ConversationStore): Client {
  return createClient({
    baseUrl: `${server.url}/v1`,
    style: "openai",
    model: "test-model",
    apiKey: "sk-test-secret-key-123",
    retries: 0,
    ...(store ? { store } : {}),
  })
}

/** Posts a raw JSON body to the chat endpoint. */
export function postRaw(url: string, body: unknown): Promise<Response> {
  return fetch(`${url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  })
}

/** The text of an assistant message's text parts. */
export function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? [])
    .filter((p) => p.type === "text")
    .map((p) => (p as { text: string }).text)
    .join("")
}

/** A tool part of a message by tool-call id. */
export function toolPart(message: UIMessage | undefined, callId?: string) {
  return (message?.parts ?? []).find(
    (p) =>
      p.type.startsWith("tool-") &&
      (callId === undefined || (p as { toolCallId?: string }).toolCallId === callId),
  ) as (Record<string, unknown> & { toolCallId: string; state: string }) | undefined
}

/** The approval id of the message's approval card; throws when there is none. */
export function approvalIdOf(message: UIMessage | undefined): string {
  const approval = toolPart(message)?.approval as { id?: unknown } | undefined
  if (typeof approval?.id !== "string") throw new Error("the message shows no approval card")
  return approval.id
}

/** A user message. */
export function userMessage(text: string): UIMessage {
  return { id: `u-${Math.random().toString(36).slice(2)}`, role: "user", parts: [{ type: "text", text }] }
}
