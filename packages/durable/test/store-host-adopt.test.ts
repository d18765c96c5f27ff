import { defineTool, pending } from "@toolnexus/core"
import { beforeAll, describe, expect, it } from "vitest"
import { hostFixture, useFakeModel } from "./host-fixture.js"

// What a door's shorthand needs of createStoreHost (§17): it answers a request parked by a run
// no host started, hands a failed start's own error to `result`, and takes a conversation id
// such as `ada/chat-1` as a run id.

const model = useFakeModel()
beforeAll(() => {
  model().addRule({ match: (r) => r.toolResults.length > 0, reply: { text: "done" } })
  model().addRule({ match: /.*/, reply: { toolCalls: [{ name: "refund", arguments: {} }] } })
})

async function setup() {
  const effects: string[] = []
  const refund = defineTool({
    name: "refund",
    description: "refunds",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => {
      if (!ctx.answer?.ok) return pending({ kind: "approval", prompt: "Refund?" })
      effects.push("refund")
      return "refunded"
    },
  })
  return { ...(await hostFixture(model(), { name: "chat", tools: [refund] })), effects }
}

describe("createStoreHost for a door's shorthand", () => {
  it("answers a conversation parked by client.ask outside any host, through its only client agent, once", async () => {
    const { client, toolkit, host, effects } = await setup()
    try {
      const parked = await client.ask("refund please", { id: "round-3-chat", toolkit })
      const requestId = parked.pending?.id as string
      expect((await host.findRequest(requestId))?.conversationId).toBe("round-3-chat")
      const delivered = await host.deliverAnswer({ id: requestId, ok: true })
      expect(delivered).toMatchObject({ runId: "round-3-chat", decision: { ok: true } })
      expect(effects).toEqual(["refund"])
      expect(await host.result("round-3-chat")).toMatchObject({ status: "done", text: "done" })
      await expect(host.deliverAnswer({ id: requestId, ok: true })).rejects.toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        decision: { ok: true },
      })
      expect(effects).toEqual(["refund"])
    } finally {
      await host.close()
    }
  })

  it("takes a conversation id with a slash as a run id, and refuses white space", async () => {
    const { host } = await setup()
    try {
      expect(await host.start("chat", "ada/chat-1", "refund please")).toEqual({
        runId: "ada/chat-1",
        started: true,
      })
      expect(await host.result("ada/chat-1")).toMatchObject({ status: "pending" })
      await expect(host.start("chat", "bad id", "x")).rejects.toMatchObject({ code: "TNX_CONFIG" })
    } finally {
      await host.close()
    }
  })

  it("a conversation run's record keeps its result without the transcript; result() gives it back", async () => {
    const { store, host } = await setup()
    try {
      await host.start("chat", "long-chat", "refund please")
      const parked = (await host.result("long-chat")) as { messages: unknown[]; status: string }
      expect(parked.status).toBe("pending")
      expect(parked.messages).toEqual(await store.get("long-chat"))
      const record = (await store.getSnapshot("host-run/long-chat")) as { result: object }
      expect(record.result).not.toHaveProperty("messages")
    } finally {
      await host.close()
    }
  })

  it("result of a start that failed in this process rejects EngineRunError with the run's own error as cause", async () => {
    const { host } = await setup()
    try {
      // The scripted rules would answer first: this run gets the failure alone.
      model().reset()
      model().enqueue({ status: 400, text: "bad request" })
      await host.start("chat", "fails-1", "go")
      const error = await host.result("fails-1").catch((e: unknown) => e)
      expect(error).toMatchObject({ code: "TNX_ENGINE_RUN", cause: { code: "TNX_LLM_HTTP" } })
    } finally {
      await host.close()
    }
  })
})
