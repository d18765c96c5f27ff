import { type Message, Role, type SendMessageRequest } from "@a2a-js/sdk"
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client"
import {
  type ConversationStore,
  createInProcessClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"

/** The SDK's own client for `url`, made through its ClientFactory (1.0, v0.3 accepted). */
export async function sdkClient(url: string, opts: { token?: string } = {}): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers)
    if (opts.token) headers.set("authorization", `Bearer ${opts.token}`)
    return fetch(input, { ...init, headers })
  }
  const legacyCompat = { enabled: true }
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat }),
  })
  return factory.createFromUrl(url)
}

/**
 * The served agent: a scripted model (no LLM) whose `book` tool needs approval, whose
 * `checkin` tool needs the user to sign in (an `authorization` request) and whose `seat` tool
 * asks for input. A prompt starting "book", "checkin" or "seat" calls it; "slow" waits for
 * `release()`; anything else is answered at once. `effects` counts what the tools did.
 */
export async function travelAgent(store: ConversationStore) {
  const effects: string[] = []
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  const book = defineTool({
    name: "book",
    description: "books a flight after approval",
    inputSchema: { type: "object", properties: { flight: { type: "string" } }, required: ["flight"] },
    run: ({ flight }, ctx) => {
      if (!ctx.answer) return pending({ kind: "approval", prompt: `Book ${flight}?` })
      effects.push(`${flight}:${JSON.stringify(ctx.answer.data ?? {})}`)
      return `booked ${flight}`
    },
  })
  const checkin = defineTool({
    name: "checkin",
    description: "checks in once the user signed in",
    inputSchema: { type: "object", properties: { flight: { type: "string" } }, required: ["flight"] },
    run: ({ flight }, ctx) => {
      if (!ctx.answer)
        return pending({
          kind: "authorization",
          prompt: "Sign in to the airline",
          url: "https://login.example/airline",
        })
      effects.push(`checkin ${flight}`)
      return `checked in ${flight}`
    },
  })
  const seat = defineTool({
    name: "seat",
    description: "asks which seat the user wants",
    inputSchema: { type: "object", properties: { flight: { type: "string" } }, required: ["flight"] },
    run: ({ flight }, ctx) => {
      if (!ctx.answer) return pending({ kind: "input", prompt: `Which seat on ${flight}?` })
      effects.push(`seat ${flight}:${JSON.stringify(ctx.answer.data ?? {})}`)
      return `seat chosen on ${flight}`
    },
  })
  const client = createInProcessClient({
    model: "scripted",
    store,
    systemPrompt: "SECRET SYSTEM PROMPT",
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content?: unknown }
      if (last.role === "tool") return { content: `done: ${String(last.content)}` }
      const text = String(last.content ?? "")
      if (text.startsWith("book "))
        return { toolCalls: [{ name: "book", arguments: { flight: text.slice(5) } }] }
      if (text.startsWith("seat "))
        return { toolCalls: [{ name: "seat", arguments: { flight: text.slice(5) } }] }
      if (text.startsWith("checkin "))
        return { toolCalls: [{ name: "checkin", arguments: { flight: text.slice(8) } }] }
      if (text === "fail") throw new Error("model exploded with SECRET detail")
      if (text === "slow") await gate
      return { content: `you said: ${text}` }
    },
  })
  const toolkit = await createToolkit({ extraTools: [book, checkin, seat] })
  return { client, toolkit, effects, release }
}

/** A raw JSON-RPC POST (for the bad-input cases the SDK client cannot send). */
export async function rpc(
  url: string,
  body: unknown,
  opts: { headers?: Record<string, string>; raw?: string } = {},
): Promise<{ status: number; json: any; headers: Headers }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0", ...opts.headers },
    body: opts.raw ?? JSON.stringify(body),
  })
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = text
  }
  return { status: response.status, json, headers: response.headers }
}

/** A user message with one text part; `taskId` continues a task. */
export function message(text: string, taskId = "", extra: Partial<Message> = {}): Message {
  return {
    messageId: `u-${Math.random().toString(36).slice(2)}`,
    contextId: "",
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  }
}

/** SendMessage params for `m`. */
export const send = (m: Message, returnImmediately = false): SendMessageRequest => ({
  tenant: "",
  message: m,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: undefined,
})

/** A message on task `taskId` answering its request with a data part `{answer}` (and `text`, when given). */
export function answerMessage(
  answer: { ok: boolean; data?: Record<string, unknown>; reason?: string },
  taskId: string,
  text?: string,
): Message {
  const part = (content: NonNullable<Message["parts"][number]["content"]>) => ({
    content,
    metadata: undefined,
    filename: "",
    mediaType: "",
  })
  const parts = [part({ $case: "data", value: { answer } })]
  if (text !== undefined) parts.unshift(part({ $case: "text", value: text }))
  return message("", taskId, { parts })
}
