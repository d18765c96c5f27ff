import type { Tool } from "@toolnexus/core"
import type { TeamOptions } from "./host-inbox.js"
import { LEAD_PROMPT, type Model, SYSTEM_PROMPT } from "./model.js"

/**
 * The demo's sub-agent team: a `support` lead that delegates to a `payments` agent holding the
 * approval tools. A request of the payments agent escalates through the lead, and the inbox
 * shows it once, with the path `root › support.1 › payments.1`.
 */
export function createTeam(opts: { tools: Tool[]; model: Model["team"] }): TeamOptions {
  return {
    lead: "support",
    runtime: {
      ...opts.model,
      registry: {
        support: {
          name: "support",
          does: "answers customers and hands refunds and emails to the payments agent",
          soul: LEAD_PROMPT,
          team: ["payments"],
          budget: { maxTurns: 8 },
        },
        payments: {
          name: "payments",
          does: "refunds orders and emails customers, each after a human approves",
          soul: SYSTEM_PROMPT,
          tools: opts.tools,
          budget: { maxTurns: 6 },
        },
      },
    },
  }
}
