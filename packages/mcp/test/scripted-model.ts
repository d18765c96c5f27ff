import {
  type Client,
  type InProcessClientOptions,
  type RunResult,
  type Toolkit,
  createInProcessClient,
} from "@toolnexus/core"

/** One tool call the scripted model makes. */
export interface ScriptedCall {
  name: string
  arguments: Record<string, unknown>
}

/**
 * A deterministic model: it makes `calls` one per turn, in order, then answers with the
 * last tool result it saw (`final: <content>`).
 */
export function scriptedClient(calls: ScriptedCall[], opts: Partial<InProcessClientOptions> = {}): Client {
  return createInProcessClient({
    model: "scripted",
    async generate({ messages }) {
      // The in-process client speaks the OpenAI chat shape.
      const done = messages.filter((m) => (m as { role?: string }).role === "tool").length
      const next = calls[done]
      if (next) return { toolCalls: [{ id: `call_${done + 1}`, name: next.name, arguments: next.arguments }] }
      const last = messages.at(-1) as { content?: unknown }
      return { content: `final: ${String(last?.content ?? "")}` }
    },
    ...opts,
  })
}

/** Answers the request a run halted on with `ok: true` (and `data`), continuing its transcript. */
export function answerHalted(
  client: Client,
  toolkit: Toolkit,
  halted: RunResult,
  data?: Record<string, unknown>,
): Promise<RunResult> {
  const pending = halted.pending
  if (!pending) throw new Error(`the run did not halt (status ${halted.status})`)
  const answer = data === undefined ? { id: pending.id, ok: true } : { id: pending.id, ok: true, data }
  return client.continueRun({ toolkit, messages: halted.messages, pending, answer })
}
