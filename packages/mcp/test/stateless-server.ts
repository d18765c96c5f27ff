import { type IncomingMessage, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from "@modelcontextprotocol/server"
import * as z from "zod"

/** A server on the official v2 SDK, served over HTTP: it speaks 2026-07-28 and 2025-11-25. */
export interface StatelessServer {
  url: string
  /** `book` calls that completed (booked). */
  booked: number
  /** Every `tools/call` of `book` the server received, first calls and retries alike. */
  bookCalls: number
  /** `plan` calls that completed (planned), after its two rounds. */
  planned: number
  /** Every `tools/call` of `book` and `plan`: what each carried back (input response keys, request state). */
  calls: RoundCall[]
  /** The `Mcp-Param-Region` header of each `tools/call` of `weather` (null: none sent). */
  regions: (string | null)[]
  close(): Promise<void>
}

/** One `tools/call` of a round-asking tool, as the server received it. */
export interface RoundCall {
  /** The tool called. */
  tool: string
  /** The keys of the call's `inputResponses` (empty on a first call). */
  responses: string[]
  /** The call's request state, if it carried one. */
  requestState: string | undefined
}

const DATE = z.object({ date: z.string() })
const TIME = z.object({ time: z.string() })

/**
 * `book` asks for a date through a multi-round-trip request (an `input_required` answer with a
 * form elicitation and a request state) and books it on the retry.
 */
export async function serveStateless(): Promise<StatelessServer> {
  const served = {
    booked: 0,
    bookCalls: 0,
    planned: 0,
    calls: [] as RoundCall[],
    regions: [] as (string | null)[],
  }
  const record = (tool: string, req: { inputResponses?: object; requestState?: () => unknown }) =>
    served.calls.push({
      tool,
      responses: Object.keys(req.inputResponses ?? {}),
      requestState: req.requestState?.() as string | undefined,
    })
  const factory = () => {
    const server = new McpServer({ name: "stateless", version: "1.0.0" })
    server.registerTool(
      "book",
      { description: "Books a table", inputSchema: z.object({ guests: z.number() }) },
      async ({ guests }, ctx) => {
        served.bookCalls++
        record("book", ctx.mcpReq)
        const answer = acceptedContent(ctx.mcpReq.inputResponses, "date", DATE)
        if (answer) {
          served.booked++
          const state = ctx.mcpReq.requestState?.() ?? ""
          return { content: [{ type: "text", text: `booked ${String(state)} on ${answer.date}` }] }
        }
        if (ctx.mcpReq.inputResponses?.date) return { content: [{ type: "text", text: "not booked" }] }
        return inputRequired({
          inputRequests: { date: inputRequired.elicit({ message: "Which date?", requestedSchema: DATE }) },
          requestState: `guests=${guests}`,
        })
      },
    )
    // Two rounds: the date, then (state carrying the date) the time; planned on the second retry.
    server.registerTool(
      "plan",
      { description: "Plans a dinner", inputSchema: z.object({}) },
      async (_args, ctx) => {
        record("plan", ctx.mcpReq)
        const state = ctx.mcpReq.requestState?.()
        const time = acceptedContent(ctx.mcpReq.inputResponses, "time", TIME)
        if (time && typeof state === "string" && state.startsWith("date=")) {
          served.planned++
          return { content: [{ type: "text", text: `planned ${state.slice(5)} at ${time.time}` }] }
        }
        const date = acceptedContent(ctx.mcpReq.inputResponses, "date", DATE)
        if (date)
          return inputRequired({
            inputRequests: { time: inputRequired.elicit({ message: "What time?", requestedSchema: TIME }) },
            requestState: `date=${date.date}`,
          })
        return inputRequired({
          inputRequests: { date: inputRequired.elicit({ message: "Which date?", requestedSchema: DATE }) },
          requestState: "plan",
        })
      },
    )
    // An output schema and a round: the round's answer carries no structured content.
    server.registerTool(
      "confirm",
      {
        description: "Asks for a confirmation",
        inputSchema: z.object({}),
        outputSchema: z.object({ confirmed: z.boolean() }),
      },
      async (_args, ctx) => {
        const answer = acceptedContent(ctx.mcpReq.inputResponses, "ok", z.object({ ok: z.boolean() }))
        if (!answer)
          return inputRequired({
            inputRequests: {
              ok: inputRequired.elicit({ message: "Sure?", requestedSchema: z.object({ ok: z.boolean() }) }),
            },
          })
        const structuredContent = { confirmed: answer.ok }
        return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent }
      },
    )
    // SEP-2243: `region` is mirrored into a header; a declaration with a space is invalid.
    server.registerTool(
      "weather",
      {
        description: "The weather in a region",
        inputSchema: z.object({ region: z.string().meta({ "x-mcp-header": "Region" }) }),
      },
      async ({ region }) => ({ content: [{ type: "text", text: `sunny in ${region}` }] }),
    )
    server.registerTool(
      "misdeclared",
      {
        description: "Declares an invalid header name",
        inputSchema: z.object({ q: z.string().meta({ "x-mcp-header": "Bad Name" }) }),
      },
      async () => ({ content: [{ type: "text", text: "should not be called" }] }),
    )
    return server
  }
  const handler = createMcpHandler(factory)
  const http = createServer((req, res) => {
    if (req.headers["mcp-method"] === "tools/call" && req.headers["mcp-name"] === "weather")
      served.regions.push((req.headers["mcp-param-region"] as string | undefined) ?? null)
    void relay(handler.fetch, req, res)
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get booked() {
      return served.booked
    },
    get bookCalls() {
      return served.bookCalls
    },
    get planned() {
      return served.planned
    },
    calls: served.calls,
    regions: served.regions,
    async close() {
      await handler.close()
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}

/** Node's request as a web Request, and the web Response back. */
async function relay(
  fetch: (request: Request) => Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers))
    if (typeof value === "string") headers.set(name, value)
  const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers,
    ...(body && req.method !== "GET" ? { body } : {}),
  })
  const response = await fetch(request)
  res.writeHead(response.status, Object.fromEntries(response.headers))
  if (response.body) for await (const chunk of response.body) res.write(chunk)
  res.end()
}
