import { randomUUID } from "node:crypto"
import type { LLMSettings } from "@toolnexus/agents"

/** How the agents of the tree reach their model. */
export interface TreeModel {
  /** The runtime's endpoint settings. */
  llm: LLMSettings
  /** The transport: absent for a real endpoint, the scripted model's otherwise. */
  fetch?: typeof fetch
  /** Which model this is, for the start-up log. */
  label: string
}

/**
 * The model: a real endpoint when `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` is set (with
 * `*_BASE_URL` and `*_MODEL`), otherwise a scripted one, so the server runs offline.
 */
export function createTreeModel(env: NodeJS.ProcessEnv = process.env): TreeModel {
  if (env.OPENAI_API_KEY) {
    const llm = {
      style: "openai" as const,
      apiKey: env.OPENAI_API_KEY,
      model: env.OPENAI_MODEL ?? "gpt-4.1-mini",
      baseUrl: env.OPENAI_BASE_URL ?? "https://api.openai.com/v1",
    }
    return { llm, label: `${llm.model} at ${llm.baseUrl}` }
  }
  if (env.ANTHROPIC_API_KEY) {
    const llm = {
      style: "anthropic" as const,
      apiKey: env.ANTHROPIC_API_KEY,
      model: env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5",
      baseUrl: env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com",
    }
    return { llm, label: `${llm.model} at ${llm.baseUrl}` }
  }
  return {
    llm: { model: "scripted-ops" },
    fetch: scriptedFetch,
    label: "a scripted model (set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real one)",
  }
}

type ChatMessage = { role: string; content?: unknown }

/**
 * The scripted model behind an OpenAI-style `fetch` (the runtime reaches its model over HTTP):
 * the lead hands the request to the releaser with the `task` tool; the releaser calls
 * `ship_release` with the service and version it reads in its prompt; each reports the result.
 */
export async function scriptedFetch(_url: string | URL | Request, init?: RequestInit): Promise<Response> {
  const body = JSON.parse(String(init?.body ?? "{}")) as {
    model?: string
    messages?: ChatMessage[]
    tools?: { function?: { name?: string } }[]
    stream?: boolean
  }
  const messages = body.messages ?? []
  const names = new Set((body.tools ?? []).map((t) => t.function?.name))
  const lastAssistant = messages.findLastIndex((m) => m.role === "assistant")
  const results = messages
    .slice(lastAssistant + 1)
    .filter((m) => m.role === "tool")
    .map((m) => String(m.content))
  const prompt = String(messages.findLast((m) => m.role === "user")?.content ?? "")
  let content: string | null = null
  let call: { name: string; arguments: Record<string, unknown> } | undefined
  if (results.length > 0) content = results.join("\n")
  else if (names.has("task")) call = { name: "task", arguments: { agent: "releaser", prompt } }
  else if (names.has("ship_release")) {
    const [, service = "checkout", version = "1.0.0"] =
      /ship\s+([\w-]+)\s+(?:v(?:ersion)?\s*)?([\w.-]+)/i.exec(prompt) ?? []
    call = { name: "ship_release", arguments: { service, version } }
  } else content = 'Ask me to "ship <service> <version>".'
  const toolCalls = call
    ? [
        {
          id: `call_${randomUUID()}`,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        },
      ]
    : []
  const id = `chatcmpl-${randomUUID()}`
  const created = Math.floor(Date.now() / 1000)
  const finish = toolCalls.length ? "tool_calls" : "stop"
  const usage = { prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 }
  const message = { role: "assistant", content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }
  if (body.stream) {
    // A streamed run (a hosted run streams its events) gets the same reply as SSE chunks.
    const delta = {
      ...message,
      ...(toolCalls.length ? { tool_calls: toolCalls.map((c, index) => ({ index, ...c })) } : {}),
    }
    const chunks = [
      {
        id,
        object: "chat.completion.chunk",
        created,
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: null }],
      },
      {
        id,
        object: "chat.completion.chunk",
        created,
        model: body.model,
        choices: [{ index: 0, delta: {}, finish_reason: finish }],
        usage,
      },
    ]
    const sse = `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("")}data: [DONE]\n\n`
    return new Response(sse, { headers: { "content-type": "text/event-stream" } })
  }
  const completion = {
    id,
    object: "chat.completion",
    created,
    model: body.model,
    choices: [{ index: 0, message, finish_reason: finish }],
    usage,
  }
  return new Response(JSON.stringify(completion), { headers: { "content-type": "application/json" } })
}
