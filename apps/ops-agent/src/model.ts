import { type Client, type ClientBaseOptions, createClient, createInProcessClient } from "@toolnexus/core"

/**
 * The model: a real endpoint when an API key is set, otherwise a scripted one that loads the
 * disk-report skill, runs `du`, writes the report and answers, so the demo runs offline.
 */
export function createModel(opts: Omit<ClientBaseOptions, "model">): { client: Client; label: string } {
  const env = process.env
  const systemPrompt = "You are an operations assistant working in one folder with the built-in tools."
  if (env.OPENAI_API_KEY) {
    const model = env.OPENAI_MODEL ?? "gpt-4.1-mini"
    const baseUrl = env.OPENAI_BASE_URL ?? "https://api.openai.com/v1"
    return {
      client: createClient({ systemPrompt, ...opts, baseUrl, style: "openai", model }),
      label: `${model} at ${baseUrl}`,
    }
  }
  const client = createInProcessClient({
    systemPrompt,
    ...opts,
    model: "scripted-ops",
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content: string | null; tool_call_id?: string }
      const calls = messages.filter((m) => (m as { role: string }).role === "tool").length
      if (last.role !== "tool") return { toolCalls: [{ name: "skill", arguments: { name: "disk-report" } }] }
      if (calls === 1) {
        return {
          content: "Measuring disk usage; running du needs your approval.",
          toolCalls: [{ name: "bash", arguments: { command: "du -sk * | sort -n" } }],
        }
      }
      if (calls === 2) {
        const usage = String(last.content).trim()
        return {
          content: "Writing the report; that needs your approval too.",
          toolCalls: [
            { name: "write", arguments: { path: "report.md", content: `# Disk usage (KiB)\n\n${usage}\n` } },
          ],
        }
      }
      return { content: `Done. ${last.content}` }
    },
  })
  return { client, label: "a scripted model (set OPENAI_API_KEY to use a real one)" }
}
