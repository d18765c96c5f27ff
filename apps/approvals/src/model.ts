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

/**
 * The model: a real endpoint when `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` is set (with
 * `*_BASE_URL` and `*_MODEL`), otherwise a scripted in-process one, so the service runs offline.
 */
export function createModel(
  opts: Omit<ClientBaseOptions, "model">,
  env: NodeJS.ProcessEnv = process.env,
): { client: Client; label: string } {
  const options = { systemPrompt: SYSTEM_PROMPT, ...opts }
  if (env.OPENAI_API_KEY) {
    const model = env.OPENAI_MODEL ?? "gpt-4.1-mini"
    const baseUrl = env.OPENAI_BASE_URL ?? "https://api.openai.com/v1"
    return {
      client: createClient({ ...options, baseUrl, style: "openai", model, apiKey: env.OPENAI_API_KEY }),
      label: `${model} at ${baseUrl}`,
    }
  }
  if (env.ANTHROPIC_API_KEY) {
    const model = env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5"
    const baseUrl = env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com"
    return {
      client: createClient({ ...options, baseUrl, style: "anthropic", model, apiKey: env.ANTHROPIC_API_KEY }),
      label: `${model} at ${baseUrl}`,
    }
  }
  return {
    client: createInProcessClient({ ...options, model: "scripted-support-agent", generate: scriptedTurn }),
    label: "a scripted model (set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real one)",
  }
}

/**
 * One turn of the scripted agent. Asked to refund and/or email, it calls the tools (both in
 * one turn when both are asked for, so the second approval parks the run again after the
 * first); given tool results, it reports them.
 */
export async function scriptedTurn({ messages }: GenerateRequest): Promise<GenerateReply> {
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
