import { defineTool, pending } from "@toolnexus/core"

/**
 * Moves money — only with a human's approval. The first call suspends the run; the retry
 * after the answer sees `ctx.answer`. The idempotency key is the same on that retry, in any
 * process, so a real payment API would deduplicate on it.
 */
export const transferFunds = defineTool({
  name: "transfer_funds",
  description: "Transfer money to a payee. Requires human approval.",
  inputSchema: {
    type: "object",
    properties: {
      to: { type: "string" },
      amountUsd: { type: "number" },
      invoice: { type: "string" },
    },
    required: ["to", "amountUsd"],
  },
  run: ({ to, amountUsd, invoice }, ctx) => {
    if (!ctx.answer) {
      const expiresAt = new Date(Date.now() + 60 * 60 * 1000).toISOString()
      return pending({
        kind: "approval",
        prompt: `Transfer $${amountUsd} to ${to} for ${invoice ?? "—"}?`,
        expiresAt,
      })
    }
    return `Transferred $${amountUsd} to ${to} (payment ref ${ctx.idempotencyKey}).`
  },
})
