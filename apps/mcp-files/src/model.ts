import { join } from "node:path"
import { type Client, type ClientBaseOptions, createClient, createInProcessClient } from "@toolnexus/core"

/**
 * The model: a real endpoint when an API key is set, otherwise a scripted one that writes a
 * notes file in `folder`, reads it back and reports, so the demo runs offline.
 */
export function createModel(
  opts: Omit<ClientBaseOptions, "model">,
  folder: string,
): { client: Client; label: string } {
  const env = process.env
  const systemPrompt = `You work on the folder ${folder} through the files__* tools. Use absolute paths.`
  if (env.OPENAI_API_KEY) {
    const model = env.OPENAI_MODEL ?? "gpt-4.1-mini"
    const baseUrl = env.OPENAI_BASE_URL ?? "https://api.openai.com/v1"
    return {
      client: createClient({ systemPrompt, ...opts, baseUrl, style: "openai", model }),
      label: `${model} at ${baseUrl}`,
    }
  }
  if (env.ANTHROPIC_API_KEY) {
    const model = env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5"
    const baseUrl = env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com"
    return {
      client: createClient({ systemPrompt, ...opts, baseUrl, style: "anthropic", model }),
      label: `${model} at ${baseUrl}`,
    }
  }
  const notes = join(folder, "notes.md")
  const client = createInProcessClient({
    ...opts,
    model: "scripted-assistant",
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content: string | null }
      if (last.role !== "tool") {
        return {
          content: "I'll write the list to notes.md; writing needs your approval.",
          toolCalls: [
            {
              name: "files__write_file",
              arguments: {
                path: notes,
                content: "# Today\n\n- [ ] review the MCP pull request\n- [ ] water the plants\n",
              },
            },
          ],
        }
      }
      if (String(last.content).startsWith("Successfully wrote")) {
        return { toolCalls: [{ name: "files__read_text_file", arguments: { path: notes } }] }
      }
      return { content: `Done. ${last.content}` }
    },
  })
  return { client, label: "a scripted model (set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real one)" }
}
