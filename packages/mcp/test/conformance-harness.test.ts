import { fileURLToPath } from "node:url"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { afterAll, describe, expect, it } from "vitest"
import { childProcesses } from "./kill-harness.js"

const HARNESS = fileURLToPath(new URL("../conformance/server-harness.mjs", import.meta.url))
const processes = childProcesses()
afterAll(() => processes.killAll())

describe("the conformance server harness", () => {
  // A 2025-11-25 client may never open the standalone GET stream (the spec lets a server refuse
  // it with 405), and the suite's own client opens it only after `initialize`, racing the first
  // call. A request to the client that is not tied to the call goes out on that stream, and the
  // SDK drops it while the stream is not open: the call never returned (CI, session 19).
  it("pushes test_elicitation's request on the call's own stream, to a client with no GET stream", async () => {
    const { line: url } = await processes.start(HARNESS)
    const client = new Client({ name: "no-get", version: "1.0.0" }, { capabilities: { elicitation: {} } })
    client.setRequestHandler("elicitation/create", async () => ({
      action: "accept" as const,
      content: { username: "ada", email: "ada@example.com" },
    }))
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      fetch: async (input, init) => {
        // Every GET (the standalone stream) is refused; posts go through.
        if ((init?.method ?? "GET").toUpperCase() === "GET") return new Response(null, { status: 405 })
        return fetch(input, init)
      },
    })
    await client.connect(transport)
    try {
      const result = await client.callTool(
        { name: "test_elicitation", arguments: { message: "Who are you?" } },
        { timeout: 10_000 },
      )
      expect(result.content).toEqual([
        {
          type: "text",
          text: 'User response: {"action":"accept","content":{"username":"ada","email":"ada@example.com"}}',
        },
      ])
    } finally {
      await client.close()
    }
  })
})
