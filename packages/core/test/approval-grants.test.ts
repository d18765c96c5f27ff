import { describe, expect, it } from "vitest"
import type { ApprovalGrant, GrantQuery } from "../src/host/approval-grants.js"
import { MemoryStore } from "../src/store/conversation-store.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { ApprovalCall } from "../src/tools/approval-policy.js"
import { clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

/** A store that keeps one grant for `pay` in conversation `granted`; `broken` makes lookups fail. */
class GrantingStore extends MemoryStore {
  asked: GrantQuery[] = []
  broken = false
  async findApprovalGrant(query: GrantQuery): Promise<ApprovalGrant | undefined> {
    this.asked.push(query)
    if (this.broken) throw new Error("store down")
    if (query.conversationId !== "granted" || query.tool !== "pay") return undefined
    return {
      id: "g-1",
      tool: "pay",
      scope: "conversation",
      conversationId: "granted",
      grantedBy: "r-0",
      createdAt: "2030-01-01T00:00:00Z",
    }
  }
}

function setup() {
  const runs: unknown[] = []
  const pay = defineTool({
    name: "pay",
    description: "Pay",
    inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
    needsApproval: true,
    run: (args) => {
      runs.push(args)
      return `paid ${args.amount}`
    },
  })
  ctx.server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: { amount: 5 } }] })
  ctx.server.enqueue((req) => ({ text: `final: ${req.toolResults.map((r) => r.content).join("|")}` }))
  return { pay, runs }
}

describe("approval grants in the gate (§19)", () => {
  it("a grant of the run's store runs the call without asking, recorded as granted", async () => {
    const { pay, runs } = setup()
    const store = new GrantingStore()
    const toolkit = await createToolkit({ extraTools: [pay] })
    const result = await clientFor("openai", ctx.server, { store }).ask("pay", { toolkit, id: "granted" })
    expect(result.text).toBe("final: paid 5")
    expect(runs).toHaveLength(1)
    expect(result.toolCalls[0]?.metadata?.approval).toEqual({
      decision: "granted",
      by: "grant",
      grantId: "g-1",
      grantedBy: "r-0",
    })
    expect(store.asked).toEqual([{ tool: "pay", conversationId: "granted" }])
  })

  it("no grant, or a failing lookup, asks", async () => {
    for (const broken of [false, true]) {
      const { pay, runs } = setup()
      const store = new GrantingStore()
      store.broken = broken
      const toolkit = await createToolkit({ extraTools: [pay] })
      const id = broken ? "granted" : "other"
      const result = await clientFor("openai", ctx.server, { store }).ask("pay", { toolkit, id })
      expect([broken, result.status, result.pending?.kind]).toEqual([broken, "pending", "approval"])
      expect(runs).toHaveLength(0)
      ctx.server.reset()
    }
  })

  it("the policy decides before a grant: deny wins over it", async () => {
    const { pay, runs } = setup()
    const store = new GrantingStore()
    const toolkit = await createToolkit({ extraTools: [pay], approvalPolicy: () => "deny" })
    const result = await clientFor("openai", ctx.server, { store }).ask("pay", { toolkit, id: "granted" })
    expect(result.text).toBe("final: declined: denied by policy")
    expect(runs).toHaveLength(0)
    expect(store.asked).toEqual([])
  })

  it("the policy hook sees a runtime handle's path, from its conversation id", async () => {
    const { pay } = setup()
    const calls: ApprovalCall[] = []
    const toolkit = await createToolkit({
      extraTools: [pay],
      approvalPolicy: (call) => {
        calls.push(call)
        return "allow"
      },
    })
    await clientFor("openai", ctx.server).ask("pay", { toolkit, id: "run-1/root/boss.1" })
    expect(calls[0]?.path).toEqual(["root", "boss.1"])
  })
})
