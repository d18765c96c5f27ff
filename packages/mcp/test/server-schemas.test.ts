import type { Client } from "@modelcontextprotocol/client"
import { type JSONSchema, type RunHost, type Tool, defineTool } from "@toolnexus/core"
import { createMemoryStore, createStoreHost } from "@toolnexus/durable"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMcpServer, hostedToolAgents } from "../src/server/index.js"
import { connectClient, serveFetch } from "./server-harness.js"

// Served tools' input schemas as MCP clients meet them: a JSON Schema 2020-12 schema listed and
// enforced as written, and SEP-2243 `x-mcp-header` parameters checked against their headers.
const KEY = "s".repeat(32)
const ran: string[] = []
const closing: { close(): Promise<void> }[] = []
let url: string

// 2020-12 keywords the core validator ignores (if/then/else) and `type: "object"` left implied.
const CONTACT: JSONSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $defs: { phone: { $anchor: "phoneDef", type: "string", pattern: "^\\+[0-9]+$" } },
  properties: {
    contactMethod: { enum: ["phone", "email"] },
    phone: { $ref: "#/$defs/phone" },
    email: { type: "string" },
  },
  required: ["contactMethod"],
  if: { properties: { contactMethod: { const: "phone" } } },
  // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword, never awaited
  then: { required: ["phone"] },
  else: { required: ["email"] },
  additionalProperties: false,
}
const contact = defineTool({
  name: "contact",
  description: "Contacts someone",
  inputSchema: CONTACT,
  run: (args) => {
    ran.push(`contact ${JSON.stringify(args)}`)
    return "contacted"
  },
})
const forecast = defineTool({
  name: "forecast",
  description: "Forecasts a region's weather",
  inputSchema: {
    type: "object",
    properties: { region: { type: "string", "x-mcp-header": "Region" }, days: { type: "integer" } },
    required: ["region"],
  },
  run: ({ region }) => {
    ran.push(`forecast ${String(region)}`)
    return `sunny in ${String(region)}`
  },
})
const tools = [contact, forecast] as Tool[]

beforeAll(async () => {
  const store = createMemoryStore()
  const host: RunHost = createStoreHost({
    store,
    agents: await hostedToolAgents(tools, { store }),
    sweepEveryMs: false,
  })
  const mcp = createMcpServer({ host, tools, name: "schemas", version: "1.0.0", stateKeys: [KEY] })
  const served = await serveFetch(mcp.fetch)
  closing.push(served, { close: () => mcp.close() }, host)
  url = served.url
}, 30_000)

afterAll(async () => {
  for (const item of closing.reverse()) await item.close()
})

async function connect(): Promise<Client> {
  const c = await connectClient(url)
  closing.push(c)
  return c
}

/** A raw 2026-07-28 `tools/call` with the standard headers and `extra` ones. */
async function rawCall(args: Record<string, unknown>, extra: Record<string, string>) {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "forecast",
      ...extra,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "forecast",
        arguments: args,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    }),
  })
  return { status: res.status, body: (await res.json()) as { error?: { code: number } } }
}

describe("createMcpServer: served tools' input schemas", () => {
  it("lists a JSON Schema 2020-12 schema as written (type implied ⇒ added) and refuses a call it rejects", async () => {
    const c = await connect()
    const { tools: listed } = await c.listTools()
    expect(listed.find((t) => t.name === "contact")?.inputSchema).toEqual({ ...CONTACT, type: "object" })
    expect(
      await c.callTool({ name: "contact", arguments: { contactMethod: "phone", phone: "+4412345" } }),
    ).toMatchObject({ content: [{ text: "contacted" }], isError: false })
    // Each breaks one 2020-12 rule: `then` (a phone needs a number), the `$ref`'d pattern,
    // additionalProperties.
    for (const args of [
      { contactMethod: "phone", email: "a@example.com" },
      { contactMethod: "phone", phone: "12345" },
      { contactMethod: "email", email: "a@example.com", fax: "1" },
    ]) {
      const refused = (await c.callTool({ name: "contact", arguments: args })) as {
        content: { text: string }[]
        isError: boolean
      }
      expect(refused.isError).toBe(true)
      expect(refused.content[0]?.text).toMatch(/invalid/i)
    }
    expect(ran.filter((r) => r.startsWith("contact"))).toEqual([
      `contact ${JSON.stringify({ contactMethod: "phone", phone: "+4412345" })}`,
    ])
  }, 30_000)

  it("an x-mcp-header parameter: the SDK client's Mcp-Param header is accepted; a missing or different one is refused before the run", async () => {
    const c = await connect()
    const { tools: listed } = await c.listTools()
    expect(listed.find((t) => t.name === "forecast")?.inputSchema).toMatchObject({
      properties: { region: { "x-mcp-header": "Region" } },
    })
    // Non-ASCII with a trailing space: the client sends it Base64-wrapped, the server decodes it.
    expect(await c.callTool({ name: "forecast", arguments: { region: "Zürich " } })).toMatchObject({
      content: [{ text: "sunny in Zürich " }],
      isError: false,
    })
    const missing = await rawCall({ region: "Oslo" }, {})
    const different = await rawCall({ region: "Oslo" }, { "mcp-param-region": "Bergen" })
    const badBase64 = await rawCall({ region: "Hello" }, { "mcp-param-region": "=?base64?SGVsbG8?=" })
    for (const refused of [missing, different, badBase64]) {
      expect(refused.status).toBe(400)
      expect(refused.body.error?.code).toBe(-32020)
    }
    expect(await rawCall({ region: "Oslo" }, { "mcp-param-region": "Oslo" })).toMatchObject({ status: 200 })
    expect(ran.filter((r) => r.startsWith("forecast"))).toEqual(["forecast Zürich ", "forecast Oslo"])
  }, 30_000)
})
