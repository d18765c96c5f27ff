import {
  type Answer,
  ConfigError,
  createToolkit,
  defineTool,
  pending,
  type Tool,
  type Toolkit,
} from "@toolnexus/core"

/** A side effect a tool performed after its request was approved (simulated; nothing leaves the process). */
export interface ToolEffect {
  tool: "refund_order" | "send_email"
  args: Record<string, unknown>
  /** The approval the tool was retried with. */
  answer: Answer
  /** Identical on every retry, resume and restart: what a real API would deduplicate on. */
  idempotencyKey: string | undefined
}

/** Options of {@link createApprovalTools}. */
export interface ApprovalToolsOptions {
  /** How long a request may wait before an approval is refused; default 24 hours. */
  expiresInMs?: number
  /** Called each time a tool performs its (simulated) effect, i.e. after an approval. */
  onEffect?: (effect: ToolEffect) => void
  /** The clock a request's `expiresAt` is counted from, in epoch ms; default `Date.now`. */
  now?: () => number
}

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * The tools of the approvals demo: `refund_order` and `send_email`. Each suspends the run with
 * an `approval` request on its first call and performs its effect only when retried with an
 * `ok` answer; a declined request never reaches the tool (the loop reports it to the model).
 */
export function createApprovalTools(opts: ApprovalToolsOptions = {}): Tool[] {
  const expiresInMs = opts.expiresInMs ?? DAY_MS
  if (!Number.isFinite(expiresInMs) || expiresInMs <= 0) {
    throw new ConfigError(`expiresInMs must be a positive number, got ${opts.expiresInMs}`)
  }
  const now = opts.now ?? Date.now
  const expiresAt = () => new Date(now() + expiresInMs).toISOString()
  const effect = opts.onEffect ?? (() => {})

  const refundOrder = defineTool({
    name: "refund_order",
    description: "Refund (part of) a customer's order. Requires a human's approval, which the tool asks for.",
    inputSchema: {
      type: "object",
      properties: {
        orderId: { type: "string", description: "The order number, e.g. A-1001" },
        amountUsd: { type: "number", description: "The amount to refund, in US dollars" },
        reason: { type: "string", description: "Why the customer gets the refund" },
      },
      required: ["orderId", "amountUsd"],
    },
    run: (asked, ctx) => {
      // The approver may lower the amount or reword the reason, never change the order.
      const args = ctx.answer ? approvedArgs(asked, ctx.answer, REFUND_EDITABLE) : asked
      const orderId = String(args.orderId)
      const amount = Number(args.amountUsd)
      if (!(amount > 0)) throw new Error(`amountUsd must be a positive number, got ${args.amountUsd}`)
      const money = `$${amount.toFixed(2)}`
      if (!ctx.answer) {
        const because = typeof args.reason === "string" && args.reason ? ` (reason: ${args.reason})` : ""
        return pending({
          kind: "approval",
          prompt: `Refund ${money} on order ${orderId}${because}?`,
          expiresAt: expiresAt(),
          // The loop adds the tool name and the arguments (data.tool, data.args) itself.
          data: { editable: REFUND_EDITABLE },
        })
      }
      effect({ tool: "refund_order", args, answer: ctx.answer, idempotencyKey: ctx.idempotencyKey })
      return `Refunded ${money} on order ${orderId} (refund ref ${ctx.idempotencyKey ?? "n/a"}).`
    },
  })

  const sendEmail = defineTool({
    name: "send_email",
    description: "Send an email to a customer. Requires a human's approval, which the tool asks for.",
    inputSchema: {
      type: "object",
      properties: {
        to: { type: "string", description: "The recipient's address" },
        subject: { type: "string" },
        body: { type: "string" },
      },
      required: ["to", "subject", "body"],
    },
    run: (asked, ctx) => {
      const args = ctx.answer ? approvedArgs(asked, ctx.answer, EMAIL_EDITABLE) : asked
      const to = String(args.to)
      const subject = String(args.subject)
      if (!ctx.answer) {
        return pending({
          kind: "approval",
          prompt: `Send an email to ${to} with the subject "${subject}"?`,
          expiresAt: expiresAt(),
          // The approver reads the whole message before it goes out, and may reword it.
          data: { editable: EMAIL_EDITABLE },
        })
      }
      effect({ tool: "send_email", args, answer: ctx.answer, idempotencyKey: ctx.idempotencyKey })
      return `Sent the email "${subject}" to ${to} (message ref ${ctx.idempotencyKey ?? "n/a"}).`
    },
  })

  return [refundOrder, sendEmail]
}

/** A toolkit holding {@link createApprovalTools}. */
export function createApprovalToolkit(opts: ApprovalToolsOptions = {}): Promise<Toolkit> {
  return createToolkit({ extraTools: createApprovalTools(opts) })
}

const REFUND_EDITABLE = ["amountUsd", "reason"]
const EMAIL_EDITABLE = ["subject", "body"]

/** The arguments to act on: the model's, with the approver's edits of editable ones (`answer.data.args`). */
function approvedArgs(
  asked: Record<string, unknown>,
  answer: Answer,
  editable: string[],
): Record<string, unknown> {
  const edits = answer.data?.args
  if (typeof edits !== "object" || edits === null) return asked
  const args = { ...asked }
  for (const name of editable) {
    const value = (edits as Record<string, unknown>)[name]
    if (value !== undefined && typeof value === typeof asked[name]) args[name] = value
  }
  return args
}
