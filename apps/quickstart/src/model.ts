import { type Client, type ClientBaseOptions, createClient, createInProcessClient } from "@toolnexus/core"

/**
 * The model: a real endpoint when an API key is set, otherwise a scripted one that plays a
 * careful assistant (asks to pay, then reports what happened), so the demo runs offline.
 */
export function createModel(opts: Omit<ClientBaseOptions, "model">): { client: Client; label: string } {
  const endpoint = configuredEndpoint()
  if (endpoint) {
    const { style, baseUrl, model } = endpoint
    return { client: createClient({ ...opts, baseUrl, style, model }), label: endpoint.label }
  }
  const client = createInProcessClient({
    ...opts,
    model: "scripted-assistant",
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content: string | null }
      if (last.role === "tool")
        return { content: `Done. ${last.content}`, usage: { promptTokens: 60, completionTokens: 12 } }
      return {
        content: "I'll pay that invoice; it needs your approval first.",
        toolCalls: [
          { name: "transfer_funds", arguments: { to: "ACME GmbH", amountUsd: 120, invoice: "INV-7" } },
        ],
        usage: { promptTokens: 40, completionTokens: 20 },
      }
    },
  })
  return { client, label: SCRIPTED }
}

const SCRIPTED = "a scripted model (set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real one)"

/** The real endpoint the environment names, if any. */
function configuredEndpoint():
  | { style: "openai" | "anthropic"; baseUrl: string; model: string; label: string }
  | undefined {
  const env = process.env
  if (env.OPENAI_API_KEY) {
    const model = env.OPENAI_MODEL ?? "gpt-4.1-mini"
    const baseUrl = env.OPENAI_BASE_URL ?? "https://api.openai.com/v1"
    return { style: "openai", baseUrl, model, label: `${model} at ${baseUrl}` }
  }
  if (env.ANTHROPIC_API_KEY) {
    const model = env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5"
    const baseUrl = env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com"
    return { style: "anthropic", baseUrl, model, label: `${model} at ${baseUrl}` }
  }
  return undefined
}

/** Where the model lives, for error messages: the endpoint URL, or the scripted model. */
export function modelLocation(): string {
  return configuredEndpoint()?.baseUrl ?? "the scripted model"
}
