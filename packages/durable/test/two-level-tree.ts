import { type AgentDef, createRuntime } from "@toolnexus/agents"
import { defineTool, pending } from "@toolnexus/core"
import { expect } from "vitest"
import type { DurableStore } from "../src/durable-store.js"
import { deliverAnswer } from "../src/resume/deliver-answer.js"
import { saveRuntime } from "../src/resume/runtime-persistence.js"
import { uid } from "../src/testing/contract/context.js"

// A resumed two-level tree, as bench/round-trips.mjs counts it: the backends' int tests pin
// the driver round trips of its delivery (DESIGN §7 "store calls per resumed two-level tree").

/**
 * Parks lead → payer on the transfer's approval in `store`, saves the tree, and delivers the
 * approval with `deliverAnswer`; `around(true)` runs right before the delivery and
 * `around(false)` right after it, so a caller counts the delivery alone.
 */
export async function deliverToParkedTree(
  store: DurableStore,
  around: (delivering: boolean) => void = () => {},
): Promise<void> {
  const options = { registry: treeRegistry(), fetch: treeFetch }
  const rt = createRuntime({ ...options, store })
  const lead = rt.spawn(rt.root, "lead")
  rt.wake(lead, "go")
  const parked = await rt.wait(lead)
  expect(parked.status).toBe("pending")
  await saveRuntime(store, uid("tree"), rt)
  around(true)
  let delivered: Awaited<ReturnType<typeof deliverAnswer>>
  try {
    delivered = await deliverAnswer(
      store,
      { id: (parked.pending as { id: string }).id, ok: true },
      { runtime: options },
    )
  } finally {
    around(false)
  }
  expect(delivered).toMatchObject({ kind: "runtime", result: { status: "done", text: "lead: payer: moved" } })
}

/** lead delegates to payer, whose transfer asks for approval: a two-level tree parked on one request. */
function treeRegistry(): Record<string, AgentDef> {
  const transfer = defineTool({
    name: "transfer",
    description: "move money",
    inputSchema: { type: "object", properties: { amount: { type: "number" } } },
    run: ({ amount }, ctx) =>
      ctx.answer
        ? ctx.answer.ok
          ? "moved"
          : "not moved"
        : pending({ kind: "approval", prompt: `Move ${amount}?` }),
  })
  return {
    lead: { name: "lead", does: "delegates", model: "lead", team: ["payer"] },
    payer: { name: "payer", does: "pays", model: "payer", tools: [transfer] },
  }
}

/** An OpenAI-style endpoint: each model calls its tool first, then answers with the tool's result. */
const treeFetch: typeof fetch = async (_url, init) => {
  const body = JSON.parse(String(init?.body))
  const result = body.messages.find((m: { role: string }) => m.role === "tool")?.content as string | undefined
  const call =
    body.model === "lead" ? ["task", { agent: "payer", prompt: "pay 5" }] : ["transfer", { amount: 5 }]
  const message =
    result !== undefined
      ? { role: "assistant", content: `${body.model}: ${result}` }
      : {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_0",
              type: "function",
              function: { name: call[0], arguments: JSON.stringify(call[1]) },
            },
          ],
        }
  return Response.json({
    id: "cmpl",
    object: "chat.completion",
    choices: [{ index: 0, message, finish_reason: result === undefined ? "tool_calls" : "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  })
}
