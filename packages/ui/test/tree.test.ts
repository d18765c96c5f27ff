import { join } from "node:path"
import { type AgentDef, agent, createRuntime } from "@toolnexus/agents"
import { type Request, createToolkit } from "@toolnexus/core"
import type { FakeRequestView } from "@toolnexus/core/testing"
import { saveRuntime } from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { DefaultChatTransport, type UIMessage } from "ai"
import { describe, expect, it } from "vitest"
import { createChatHandler } from "../src/ai-sdk/index.js"
import type { ChatHandlerOptions } from "../src/internal/chat-options.js"
import { TestChat, clientOf, refundTools, serve, settled, textOf, useFakeModel } from "./helpers.js"

// Sub-agent trees behind the chat handler, on SQLite, with a restart between the card and the
// click: a tree started by the chat's own turn (`agent().asTool()` in the toolkit), and a saved
// runtime's tree answered through the chat (the `runtime` option).

const env = useFakeModel("tree")
const llm = () => ({ baseUrl: `${env.fake.url}/v1`, model: "test-model", apiKey: "sk-test-secret-key-123" })
const results = (req: FakeRequestView) => req.toolResults.map((r) => r.content)

/** The scripted tree: the caller (the chat, or `boss`) delegates to `helper`, which refunds. */
function scriptTree() {
  env.fake.reset()
  const helperTurn = (req: FakeRequestView) => req.system === "helper"
  env.fake.addRule({
    match: (r) => helperTurn(r) && r.toolResults.length === 0,
    reply: { toolCalls: [{ name: "refund", arguments: { orderId: "A1", amount: 30 } }] },
  })
  env.fake.addRule({ match: helperTurn, reply: (r) => ({ text: `helper: ${results(r).join(" | ")}` }) })
  const callerTurn = (req: FakeRequestView) => !helperTurn(req)
  env.fake.addRule({
    match: (r) => callerTurn(r) && r.toolResults.length === 0,
    reply: { toolCalls: [{ name: "helper", arguments: { prompt: "refund order A1" } }] },
  })
  env.fake.addRule({ match: callerTurn, reply: (r) => ({ text: `Done: ${results(r).join(" | ")}` }) })
}

/** Model turns asked from scratch (no tool results yet) of the helper, and of its caller: a re-ask counts twice. */
const asked = () => {
  const fresh = env.fake.requests.filter((r) => r.toolResults.length === 0)
  const helper = fresh.filter((r) => r.system === "helper").length
  return { caller: fresh.length - helper, helper }
}

type Tools = ReturnType<typeof refundTools>["tools"]

/** The helper agent: refunds (the refund tool of one process, logging to its effects). */
const helperWith = (tools: Tools) =>
  agent("helper", { does: "refunds orders", soul: "helper", tools: tools.slice(0, 1) })

/**
 * One "process" on the SQLite file: store, client, handler, HTTP server. `optionsOf` builds the
 * handler's toolkit or runtime around this process's own tools (and their effects list).
 */
async function boot(path: string, optionsOf: (tools: Tools) => Promise<Partial<ChatHandlerOptions>>) {
  const store = new SqliteStore({ path })
  const client = clientOf(env.fake, store)
  const { effects, tools } = refundTools()
  const server = await serve(createChatHandler({ client, store, ...(await optionsOf(tools)) }))
  return {
    store,
    effects,
    url: server.url,
    stop: async () => {
      await server.close()
      await store.close()
    },
  }
}

/** A chat of the real `ai` client whose transport follows the server across restarts. */
function chatOn(id: string, current: () => { url: string }) {
  const errors: Error[] = []
  const chat = new TestChat({
    id,
    transport: new DefaultChatTransport({
      api: "/api/chat",
      fetch: (input, init) => fetch(`${current().url}${String(input)}`, init),
    }),
    onError: (e) => errors.push(e),
  })
  return { chat, errors }
}

const requestPartOf = (message: UIMessage | undefined) =>
  message?.parts.find((p) => p.type === "data-toolnexus-request") as { id: string; data: Request } | undefined

describe("a sub-agent tree behind the chat handler (SQLite, a restart between card and click)", () => {
  it("the chat's turn delegates to a sub-agent: the child's approval is a request part; answered after a restart, the final text streams", async () => {
    scriptTree()
    const path = join(env.dir, "plain-tree.db")
    const bootTree = () =>
      boot(path, async (tools) => ({
        toolkit: await createToolkit({ extraTools: [helperWith(tools).asTool({ llm: llm() })] }),
      }))
    let current = await bootTree()
    const { chat, errors } = chatOn("tree-chat", () => current)
    await chat.sendMessage({ text: "refund my order through the helper" })
    await settled(chat)
    const part = requestPartOf(chat.lastMessage)
    // An escalated approval (the child's, with its path) is a request part, not a card of a
    // call this message shows.
    expect(part?.data).toMatchObject({ kind: "approval", data: { path: ["root", "helper.1"] } })
    expect(
      chat.lastMessage?.parts.some((p) => (p as { state?: string }).state === "approval-requested"),
    ).toBe(false)
    const firstEffects = current.effects

    await current.stop()
    current = await bootTree()
    expect((await current.store.listPending()).map((e) => e.request.id)).toEqual([part?.id])
    await chat.sendMessage(undefined, { body: { answer: { id: part?.id, ok: true } } })
    await settled(chat)
    expect(errors).toEqual([])
    expect(textOf(chat.lastMessage)).toBe("Done: helper: refunded 30 EUR on A1")
    expect(firstEffects).toEqual([])
    expect(current.effects).toHaveLength(1)
    // Neither the chat's turn nor the child's was asked again.
    expect(asked()).toEqual({ caller: 1, helper: 1 })
    expect(await current.store.listPending()).toEqual([])
    await current.stop()
  })

  it("the `runtime` option: a saved runtime's child approval, answered through the chat after a restart, resumes the tree once", async () => {
    scriptTree()
    const path = join(env.dir, "saved-tree.db")
    const registryWith = (tools: Tools): Record<string, AgentDef> => ({
      boss: { name: "boss", does: "delegates", soul: "boss", tools: [helperWith(tools).asTool()] },
    })
    // The tree ran in a job of the first process and parked on the child's approval.
    const first = refundTools()
    const store = new SqliteStore({ path })
    const rt = createRuntime({ registry: registryWith(first.tools), llm: llm(), store, namespace: "ops" })
    const boss = rt.spawn(rt.root, "boss")
    rt.wake(boss, "refund order A1")
    const parked = (await rt.wait(boss)).pending as Request
    expect(parked.data?.path).toEqual(["root", "boss.1", "helper.1"])
    await saveRuntime(store, "ops", rt)
    await store.close()

    // The restarted process serves the chat with the runtime's options.
    const current = await boot(path, async (tools) => ({
      runtime: { registry: registryWith(tools), llm: llm() },
    }))
    // Another user's chat cannot answer the runtime's request: 404, nothing claimed or run.
    const foreign = await fetch(`${current.url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        id: "someone-else",
        trigger: "submit-message",
        messages: [],
        answer: { id: parked.id, ok: true },
      }),
    })
    expect(foreign.status).toBe(404)
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe("TNX_UNKNOWN_REQUEST")
    expect(await current.store.getDecision(parked.id)).toBeUndefined()
    expect(current.effects).toEqual([])

    // The chat whose conversation is the runtime's key answers it.
    const { chat, errors } = chatOn("ops", () => current)
    await chat.sendMessage(undefined, { body: { answer: { id: parked.id, ok: true } } })
    await settled(chat)
    expect(errors).toEqual([])
    // Every resumed handle's run streams: the child's final text, then the boss's; the
    // child's tool result (a call this chat never showed) and its end are left out.
    expect(textOf(chat.lastMessage)).toBe("helper: refunded 30 EUR on A1Done: helper: refunded 30 EUR on A1")
    expect(chat.lastMessage?.parts.some((p) => p.type.startsWith("tool-"))).toBe(false)
    expect(first.effects).toEqual([])
    expect(current.effects).toHaveLength(1)
    expect(asked()).toEqual({ caller: 1, helper: 1 })
    expect(await current.store.getDecision(parked.id)).toEqual({ ok: true })
    await current.stop()
  })
})
