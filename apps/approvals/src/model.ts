import { randomUUID } from "node:crypto"
import type { LLMSettings } from "@toolnexus/agents"
import {
  type Client,
  type ClientBaseOptions,
  createClient,
  createInProcessClient,
  type GenerateReply,
  type GenerateRequest,
} from "@toolnexus/core"

/** The instructions a real model gets; the scripted one follows them by construction. */
export const SYSTEM_PROMPT =
  "You are a customer-support agent. Use refund_order to refund orders and send_email to write to " +
  "customers; both ask a human for approval on their own, so just call them. When a tool result says " +
  "a request was declined, do not retry it. Finish with one or two sentences saying what was done."

/** The instructions of a team's lead agent, which hands payments and emails to a sub-agent. */
export const LEAD_PROMPT =
  "You are the lead of a support team. Hand every refund or customer email to the payments agent with " +
  "the task tool, then tell the customer in one or two sentences what was done."

/** A model as the app uses it: the client of plain runs, and the settings of a team's agents. */
export interface Model {
  client: Client
  /** How the agents of a team run reach the same model. */
  team: { llm?: LLMSettings; fetch?: typeof fetch }
  /** Says which model this is, for the start-up log. */
  label: string
  /** Where the model is served, for error messages; absent for the scripted one. */
  url?: string
}

/**
 * The model: a real endpoint when `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` is set (with
 * `*_BASE_URL` and `*_MODEL`), otherwise a scripted in-process one, so the service runs offline.
 */
export function createModel(
  opts: Omit<ClientBaseOptions, "model">,
  env: NodeJS.ProcessEnv = process.env,
): Model {
  const options = { systemPrompt: SYSTEM_PROMPT, ...opts }
  const endpoint = env.OPENAI_API_KEY
    ? {
        style: "openai" as const,
        apiKey: env.OPENAI_API_KEY,
        model: env.OPENAI_MODEL ?? "gpt-4.1-mini",
        baseUrl: env.OPENAI_BASE_URL ?? "https://api.openai.com/v1",
      }
    : env.ANTHROPIC_API_KEY
      ? {
          style: "anthropic" as const,
          apiKey: env.ANTHROPIC_API_KEY,
          model: env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5",
          baseUrl: env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com",
        }
      : undefined
  if (endpoint) {
    return {
      client: createClient({ ...options, ...endpoint }),
      team: { llm: endpoint },
      label: `${endpoint.model} at ${endpoint.baseUrl}`,
      url: endpoint.baseUrl,
    }
  }
  return {
    client: createInProcessClient({ ...options, model: "scripted-support-agent", generate: scriptedTurn }),
    team: { llm: { model: "scripted-support-agent" }, fetch: scriptedFetch },
    label: "a scripted model (set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real one)",
  }
}

/**
 * The scripted model behind an OpenAI-style `fetch`, for the agents of a team run (the
 * runtime reaches its model over HTTP). A streamed request (a run whose events are watched, as
 * on a host) gets the same reply as one chunk of server-sent events.
 */
export async function scriptedFetch(
  _url: string | URL | globalThis.Request,
  init?: RequestInit,
): Promise<Response> {
  const body = JSON.parse(String(init?.body ?? "{}")) as {
    model?: string
    messages?: unknown[]
    tools?: unknown[]
    stream?: boolean
  }
  const messages = (body.messages ?? []).filter((m) => (m as { role: string }).role !== "system")
  const reply = await scriptedTurn({
    model: body.model ?? "",
    messages: messages as never,
    tools: body.tools ?? [],
    turn: 0,
  })
  const toolCalls = (reply.toolCalls ?? []).map((call) => ({
    id: `call_${randomUUID()}`,
    type: "function",
    function: { name: call.name, arguments: JSON.stringify(call.arguments) },
  }))
  const completion = {
    id: `chatcmpl-${randomUUID()}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: reply.content ?? null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: toolCalls.length ? "tool_calls" : "stop",
      },
    ],
    usage: { prompt_tokens: 50, completion_tokens: 15, total_tokens: 65 },
  }
  if (body.stream) return streamed(completion, toolCalls)
  return new Response(JSON.stringify(completion), { headers: { "content-type": "application/json" } })
}

/** A completion as OpenAI-style stream chunks: the message in one delta, then the finish. */
function streamed(
  completion: {
    id: string
    created: number
    model?: string
    choices: { message: { content: string | null }; finish_reason: string }[]
    usage: object
  },
  toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[],
): Response {
  const [choice] = completion.choices
  const base = {
    id: completion.id,
    object: "chat.completion.chunk",
    created: completion.created,
    model: completion.model,
  }
  const delta = {
    role: "assistant",
    ...(choice?.message.content ? { content: choice.message.content } : {}),
    ...(toolCalls.length ? { tool_calls: toolCalls.map((call, index) => ({ index, ...call })) } : {}),
  }
  const chunks = [
    { ...base, choices: [{ index: 0, delta, finish_reason: null }] },
    {
      ...base,
      choices: [{ index: 0, delta: {}, finish_reason: choice?.finish_reason }],
      usage: completion.usage,
    },
  ]
  const text = `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("")}data: [DONE]\n\n`
  return new Response(text, { headers: { "content-type": "text/event-stream" } })
}

/**
 * One turn of the scripted agent. Asked to refund and/or email, it calls the tools (both in
 * one turn when both are asked for, so the second approval parks the run again after the
 * first); given tool results, it reports them.
 */
export async function scriptedTurn({ messages, tools }: GenerateRequest): Promise<GenerateReply> {
  const usage = { promptTokens: 50, completionTokens: 15 }
  const lastAssistant = messages.findLastIndex((m) => (m as { role: string }).role === "assistant")
  const results = messages
    .slice(lastAssistant + 1)
    .filter((m) => (m as { role: string }).role === "tool")
    .map((m) => String((m as { content: unknown }).content))
  if (results.length > 0) {
    const lines = results.map((r) =>
      r.startsWith("declined:") ? `I did not do it, because it was ${r}` : `Done: ${r}`,
    )
    return { content: lines.join("\n"), usage }
  }
  const user = messages.findLast((m) => (m as { role: string }).role === "user") as { content: string }
  const prompt = String(user?.content ?? "")
  const toolCalls: GenerateReply["toolCalls"] = []
  const canDelegate = tools.some((t) => (t as { function?: { name?: string } }).function?.name === "task")
  if (canDelegate && /refund|e-?mail/i.test(prompt)) {
    return {
      content: "I am handing this to the payments agent.",
      toolCalls: [{ name: "task", arguments: { agent: "payments", prompt } }],
      usage,
    }
  }
  if (/refund/i.test(prompt)) {
    const orderId = /order\s+#?([A-Za-z0-9-]+)/i.exec(prompt)?.[1] ?? "A-1001"
    const amountUsd = Number(/\$\s?(\d+(?:\.\d{1,2})?)/.exec(prompt)?.[1] ?? 25)
    toolCalls.push({ name: "refund_order", arguments: { orderId, amountUsd, reason: "customer request" } })
  }
  if (/e-?mail/i.test(prompt)) {
    const to = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/.exec(prompt)?.[0] ?? "customer@example.com"
    const body = "Hello,\n\nwe have processed your request. Sorry for the trouble.\n\nSupport"
    toolCalls.push({ name: "send_email", arguments: { to, subject: "About your order", body } })
  }
  if (toolCalls.length === 0) {
    return {
      content:
        'I can refund orders and email customers, each after a human approves. Try "Refund order ' +
        'A-1001 $25" or "Refund order A-1001 $25 and email jane@example.com".',
      usage,
    }
  }
  return { content: "That needs a human's approval first.", toolCalls, usage }
}
