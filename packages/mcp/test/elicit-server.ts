import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { z } from "zod"

export const DATE_FORM = {
  type: "object" as const,
  properties: { date: { type: "string" as const, description: "YYYY-MM-DD" } },
  required: ["date"],
}

/** A form whose every field is optional with a default (SEP-1034), and one required field. */
export const PROFILE_FORM = {
  type: "object" as const,
  properties: {
    email: { type: "string" as const },
    name: { type: "string" as const, default: "John Doe" },
    age: { type: "integer" as const, default: 30 },
    score: { type: "number" as const, default: 95.5 },
    status: { type: "string" as const, enum: ["active", "inactive"], default: "active" },
    verified: { type: "boolean" as const, default: true },
  },
  required: ["email"],
}

/** A server whose `book` tool asks the user for a date, and whose `sign` tool sends them to a URL. */
export function elicitingServer(log: { elicitations: number; calls: number }): () => McpServer {
  return () => {
    const server = new McpServer({ name: "elicit-test", version: "1.0.0" })
    server.registerTool(
      "book",
      { description: "Book a table; asks for the date", inputSchema: { guests: z.number() } },
      async ({ guests }, extra) => {
        log.calls++
        log.elicitations++
        const reply = await server.server.elicitInput(
          { mode: "form", message: "Which date?", requestedSchema: DATE_FORM },
          { relatedRequestId: extra.requestId },
        )
        if (reply.action !== "accept")
          return { content: [{ type: "text", text: `not booked: ${reply.action}` }] }
        return { content: [{ type: "text", text: `booked ${guests} for ${String(reply.content?.date)}` }] }
      },
    )
    server.registerTool("plan", { description: "Asks for a date, then for a time" }, async (extra) => {
      log.calls++
      const ask = async (message: string, key: string) => {
        log.elicitations++
        const reply = await server.server.elicitInput(
          {
            mode: "form",
            message,
            requestedSchema: { type: "object", properties: { [key]: { type: "string" } }, required: [key] },
          },
          { relatedRequestId: extra.requestId },
        )
        return reply.action === "accept" ? String(reply.content?.[key]) : undefined
      }
      const date = await ask("Which date?", "date")
      const time = date === undefined ? undefined : await ask("What time?", "time")
      return { content: [{ type: "text", text: `planned ${date} at ${time}` }] }
    })
    server.registerTool("profile", { description: "Asks for a profile with defaults" }, async (extra) => {
      log.calls++
      log.elicitations++
      const reply = await server.server.elicitInput(
        { mode: "form", message: "Your profile?", requestedSchema: PROFILE_FORM },
        { relatedRequestId: extra.requestId },
      )
      return {
        content: [{ type: "text", text: `${reply.action}: ${JSON.stringify(reply.content ?? null)}` }],
      }
    })
    server.registerTool("stall", { description: "Never answers" }, () => new Promise(() => {}))
    server.registerTool(
      "sign",
      { description: "Asks the user to finish a flow in the browser" },
      async (extra) => {
        log.calls++
        log.elicitations++
        const reply = await server.server.elicitInput(
          {
            mode: "url",
            message: "Confirm your account",
            url: "https://example.test/confirm?x=1",
            elicitationId: `e-${log.calls}`,
          },
          { relatedRequestId: extra.requestId },
        )
        return { content: [{ type: "text", text: `url flow: ${reply.action}` }] }
      },
    )
    return server
  }
}
