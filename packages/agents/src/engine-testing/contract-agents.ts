import { appendFileSync } from "node:fs"
import {
  type Client,
  type ConversationStore,
  type Tool,
  type Toolkit,
  createClient,
  createToolkit,
  defineTool,
  pending,
} from "@toolnexus/core"
import { agent } from "../agent.js"
import type { AgentDef, RuntimeOptions } from "../types.js"

/** What the contract's agents are defined with: an engine package's `restateAgent`/`dbosAgent`. */
export type DefineEngineAgent = (opts: {
  name: string
  client?: Client
  toolkit?: Toolkit
  runtime?: Omit<RuntimeOptions, "store" | "executor" | "namespace"> & { root: string }
}) => unknown

/**
 * The agents every engine worker of the contract suite serves, on the scripted model at
 * `llmUrl`: `refunds` (a lookup, an approved refund, a request already expired), `long` (299
 * tool turns), `tree` (lead → payer, a runtime) and `boss` (a client whose tool is the payer
 * agent via `asTool`). Tool executions are appended to `logFile`, one JSON line each, so a
 * test counts them across worker processes. With `store`, the clients keep their conversations
 * there (a store host's agents).
 */
export async function contractAgents(
  define: DefineEngineAgent,
  opts: { llmUrl: string; logFile: string; store?: ConversationStore },
): Promise<unknown[]> {
  const log = (entry: object) => appendFileSync(opts.logFile, `${JSON.stringify(entry)}\n`)
  const lookup = defineTool({
    name: "lookup",
    description: "Looks an order up",
    inputSchema: { type: "object", properties: { order: { type: "string" } } },
    run: ({ order }, ctx) => {
      log({ tool: "lookup", key: ctx.idempotencyKey })
      return `order ${order}: 30 EUR`
    },
  })
  const refund = defineTool({
    name: "refund",
    description: "Refunds an amount, with approval",
    inputSchema: { type: "object", properties: { amount: { type: "number" } } },
    run: ({ amount }, ctx) => {
      log({ tool: "refund", key: ctx.idempotencyKey, answer: ctx.answer ?? null })
      return ctx.answer?.ok
        ? `refunded ${amount}`
        : pending({ kind: "approval", prompt: `Refund ${amount} EUR?` })
    },
  })
  const expiring = defineTool({
    name: "expiring",
    description: "Asks with a deadline long past",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => {
      log({ tool: "expiring", key: ctx.idempotencyKey, answer: ctx.answer ?? null })
      return ctx.answer?.ok
        ? "approved in time"
        : pending({
            id: `late.${ctx.idempotencyKey}`,
            kind: "approval",
            prompt: "Approve late?",
            expiresAt: "2000-01-01T00:00:00Z",
          })
    },
  })
  const tick = defineTool({
    name: "tick",
    description: "Counts",
    inputSchema: { type: "object", properties: { n: { type: "number" } } },
    run: ({ n }) => `tick ${n}`,
  })
  const llm = { baseUrl: `${opts.llmUrl}/v1`, style: "openai" as const, model: "m", apiKey: "k" }
  const client = (soul: string) =>
    createClient({
      ...llm,
      systemPrompt: soul,
      maxTurns: 400,
      retryBaseMs: 1,
      ...(opts.store ? { store: opts.store } : {}),
    })
  const toolkit = (tools: Tool[]) => createToolkit({ extraTools: tools })
  const payer: AgentDef = { name: "payer", does: "pays", soul: "payer", tools: [refund] }
  return [
    define({
      name: "refunds",
      client: client("refunds"),
      toolkit: await toolkit([lookup, refund, expiring]),
    }),
    define({ name: "long", client: client("long"), toolkit: await toolkit([tick]) }),
    define({
      name: "tree",
      runtime: {
        root: "lead",
        llm,
        registry: { lead: { name: "lead", does: "leads", soul: "lead", team: ["payer"] }, payer },
      },
    }),
    define({
      name: "boss",
      client: client("boss"),
      toolkit: await toolkit([agent("payer", payer).asTool({ llm })]),
    }),
  ]
}
