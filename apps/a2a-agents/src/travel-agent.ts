import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { serveA2A } from "@toolnexus/a2a"
import { createInProcessClient, createToolkit, defineTool, hostAgent, pending } from "@toolnexus/core"
import { type DurableStore, createStoreHost } from "@toolnexus/durable"
import { toNodeListener } from "@toolnexus/ui"

/**
 * The travel agent: a scripted model whose `book_flight` tool needs approval, run by a store
 * host on its own store and served over A2A with `serveA2A({ host, agent })`. `onBooked` sees
 * each booking made (the side effect).
 */
export async function startTravelAgent(opts: {
  store: DurableStore
  port: number
  onBooked: (flight: string) => void
}): Promise<{ url: string; close(): Promise<void> }> {
  const book = defineTool({
    name: "book_flight",
    description: "Books a flight; a human approves it first.",
    inputSchema: { type: "object", properties: { flight: { type: "string" } }, required: ["flight"] },
    run: ({ flight }, ctx) => {
      if (!ctx.answer)
        return pending({ kind: "approval", prompt: `Book flight ${flight} to Lisbon for EUR 180?` })
      opts.onBooked(String(flight))
      return `booked ${flight}, confirmation TNX-${String(flight).replace(/\W/g, "")}`
    },
  })
  const client = createInProcessClient({
    model: "scripted-travel-agent",
    store: opts.store,
    async generate({ messages }) {
      const last = messages.at(-1) as { role: string; content?: unknown }
      if (last.role === "tool") return { content: `Your trip is set: ${String(last.content)}.` }
      return { toolCalls: [{ name: "book_flight", arguments: { flight: "TP1351" } }] }
    },
  })
  const toolkit = await createToolkit({ extraTools: [book] })
  // The host runs the tasks and decides their answers (once across processes sharing the store).
  const host = createStoreHost({
    store: opts.store,
    agents: [hostAgent({ name: "travel", client, toolkit })],
  })
  const handler = serveA2A({
    card: {
      name: "travel",
      description: "Books flights and hotels.",
      skills: [{ id: "book", name: "book", description: "books a flight, with your approval" }],
    },
    host,
    agent: "travel",
    store: opts.store, // the task records, beside their runs
  })
  // serveA2A is a Fetch-API handler; toNodeListener serves it from node:http (a malformed Host
  // is a 400 there, streams are written as they come, a client that goes away stops the writing).
  const server = createServer(toNodeListener(handler.fetch))
  await new Promise<void>((resolve) => server.listen(opts.port, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await handler.close()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await host.close()
    },
  }
}
