import { type FakeLLMServer, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"

/** The model name the offline proxy reports (`GET /v1/models`) and logs. */
export const OFFLINE_MODEL = "offline-scripted"

/**
 * A scripted model for trying the proxy without a key (as the other apps have): it calls the
 * first tool the caller offers — string arguments the schema requires get the user's text —
 * and once that tool's result comes back it reports it; without tools it repeats what it was
 * told. Served by core's fake LLM server on 127.0.0.1, so the proxy talks to it over the same
 * OpenAI wire format as to a real upstream.
 */
export function startOfflineModel(): Promise<FakeLLMServer> {
  return createFakeLLMServer({
    rules: [
      {
        match: (req) => req.toolResults.length > 0,
        reply: (req) => ({
          text: `(offline model) The tool answered: ${req.toolResults.map((r) => r.content).join("; ")}`,
        }),
      },
      { match: (req) => req.toolNames.length > 0, reply: (req) => ({ toolCalls: [firstToolCall(req)] }) },
    ],
    fallback: (req) => ({ text: `(offline model) You said: ${req.lastUserText}` }),
  })
}

function firstToolCall(req: FakeRequestView): { name: string; arguments: Record<string, unknown> } {
  const name = req.toolNames[0] as string
  const tools: unknown[] = Array.isArray(req.body.tools) ? req.body.tools : []
  const tool = tools.find((t) => functionOf(t)?.name === name)
  const schema = (functionOf(tool)?.parameters ?? {}) as {
    properties?: Record<string, { type?: unknown }>
    required?: unknown
  }
  const args: Record<string, unknown> = {}
  for (const key of Array.isArray(schema.required) ? schema.required : []) {
    if (typeof key !== "string") continue
    const type = schema.properties?.[key]?.type
    args[key] = type === "number" || type === "integer" ? 1 : type === "boolean" ? true : req.lastUserText
  }
  return { name, arguments: args }
}

/** `{ type: "function", function: { name, parameters } }` (chat) or the flat Responses shape. */
function functionOf(tool: unknown): { name?: unknown; parameters?: unknown } | undefined {
  if (typeof tool !== "object" || tool === null) return undefined
  const t = tool as {
    function?: { name?: unknown; parameters?: unknown }
    name?: unknown
    parameters?: unknown
  }
  return t.function ?? t
}
