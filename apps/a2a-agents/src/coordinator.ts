import { a2aTool } from "@toolnexus/a2a"
import { type Client, type Toolkit, createInProcessClient, createToolkit } from "@toolnexus/core"
import type { DurableStore } from "@toolnexus/durable"

/**
 * The coordinator: a scripted model with one tool, the remote travel agent (`a2aTool`),
 * on its own store. It asks the travel agent to book, then reports what it said.
 */
export async function createCoordinator(
  store: DurableStore,
  travelUrl: string,
): Promise<{ client: Client; toolkit: Toolkit }> {
  const travel = await a2aTool({ url: travelUrl, name: "travel", callTimeoutMs: 30_000, pollIntervalMs: 50 })
  const client = createInProcessClient({
    model: "scripted-coordinator",
    store,
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content?: unknown }
      if (last.role === "tool") return { content: `Coordinator: ${String(last.content)}` }
      return {
        toolCalls: [{ name: "travel", arguments: { prompt: "Book me a flight to Lisbon on Friday." } }],
      }
    },
  })
  return { client, toolkit: await createToolkit({ extraTools: [travel] }) }
}
