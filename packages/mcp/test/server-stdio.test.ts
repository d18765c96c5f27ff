import { fileURLToPath } from "node:url"
import { Client } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import { afterEach, describe, expect, it } from "vitest"

const SERVER = fileURLToPath(new URL("./fixtures/stdio-mcp-server.mjs", import.meta.url))
const clients: Client[] = []
let asked: unknown[] = []
afterEach(async () => {
  asked = []
  for (const c of clients.splice(0)) await c.close()
})

async function connect(era: "modern" | "legacy", elicitation: boolean): Promise<Client> {
  const client = new Client(
    { name: "stdio-test-client", version: "1.0.0" },
    {
      capabilities: elicitation ? { elicitation: { form: {} } } : {},
      ...(era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
    },
  )
  if (elicitation)
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params)
      return { action: "accept", content: { approved: true } }
    })
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [SERVER], stderr: "ignore" }),
  )
  clients.push(client)
  return client
}

describe("createMcpServer over stdio (connectStdio)", () => {
  it("2026-07-28: the approval is asked through input_required and the tool runs once", async () => {
    const c = await connect("modern", true)
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(["deploy"])
    const result = await c.callTool({ name: "deploy", arguments: { prompt: "prod" } })
    expect(result).toMatchObject({ content: [{ text: "deployed (runs: 1)" }] })
    expect(asked).toEqual([expect.objectContaining({ message: "Deploy prod?" })])
  })

  it("2025-11-25 through initialize: the same approval is asked with an elicitation request", async () => {
    const c = await connect("legacy", true)
    const result = await c.callTool({ name: "deploy", arguments: { prompt: "prod" } })
    expect(result).toMatchObject({ content: [{ text: "deployed (runs: 1)" }] })
    expect(asked).toEqual([expect.objectContaining({ message: "Deploy prod?" })])
  })

  it("2025-11-25 without elicitation: an isError result naming the request", async () => {
    const c = await connect("legacy", false)
    const result = await c.callTool({ name: "deploy", arguments: { prompt: "prod" } })
    expect(result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/\.approve \(approval/) }],
    })
  })
})
