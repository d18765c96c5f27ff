import { type Tool, defineTool, pending, relayTool } from "@toolnexus/core"

/** A refund the tool made, by idempotency key (a real payment API would deduplicate on it). */
export interface Refund {
  orderId: string
  amount: number
  idempotencyKey: string | undefined
}

/**
 * The chat's tools: `refund` asks for an approval before it pays; `ask_email` asks the user a
 * question (an `input` request); `browser_time` is a relay tool, run by the page in the browser.
 */
export function chatTools(refunds: Refund[] = []): Tool[] {
  const refund = defineTool({
    name: "refund",
    description: "Refunds an order. Asks a human to approve it first.",
    inputSchema: {
      type: "object",
      properties: { orderId: { type: "string" }, amount: { type: "number" } },
      required: ["orderId", "amount"],
    },
    run: ({ orderId, amount }, ctx) => {
      if (!ctx?.answer?.ok)
        return pending({ kind: "approval", prompt: `Refund ${amount} EUR on order ${orderId}?` })
      refunds.push({ orderId: String(orderId), amount: Number(amount), idempotencyKey: ctx.idempotencyKey })
      return `Refunded ${amount} EUR on order ${orderId}.`
    },
  })
  const askEmail = defineTool({
    name: "ask_email",
    description: "Asks the user for the e-mail address to send the receipt to.",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) =>
      ctx?.answer?.ok
        ? `The receipt goes to ${String(ctx.answer.data?.email)}.`
        : pending({
            kind: "input",
            prompt: "Which e-mail address should the receipt go to?",
            data: {
              schema: { type: "object", properties: { email: { type: "string" } }, required: ["email"] },
            },
          }),
  })
  const browserTime = relayTool("browser_time", "The time and time zone of the user's browser.", {
    type: "object",
    properties: {},
  })
  return [refund, askEmail, browserTime]
}
