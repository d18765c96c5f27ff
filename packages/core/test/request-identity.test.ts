import { describe, expect, it } from "vitest"
import { ConfigError, UnknownRequestError } from "../src/errors.js"
import { MemoryStore } from "../src/store/conversation-store.js"
import type { ConversationStore, SaveMeta } from "../src/store/conversation-store.js"
import { pending, pendingOf } from "../src/suspension/pending.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Message, Request } from "../src/types.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

let payments = 0
const pay = defineTool({
  name: "pay",
  description: "pays after approval",
  inputSchema: { type: "object", properties: { amount: { type: "number" } } },
  run: (args, toolCtx) => {
    if (!toolCtx.answer?.ok) return pending({ kind: "approval", prompt: `Pay ${args.amount}?` })
    payments++
    return `paid ${args.amount}`
  },
})
const labelled = defineTool({
  name: "labelled",
  description: "sets its own description keys",
  inputSchema: { type: "object" },
  run: () =>
    pending({ kind: "approval", prompt: "ok?", data: { tool: "billing", args: { redacted: true } } }),
})

describe("pending() validation", () => {
  it.each(["2026-12-01T09:30:00Z", "2026-12-01T09:30:00.123+01:00", "2024-02-29t00:00:00-05:30"])(
    "accepts the RFC 3339 date-time %s",
    (expiresAt) => {
      expect(pendingOf(pending({ kind: "approval", prompt: "p", expiresAt }))?.expiresAt).toBe(expiresAt)
    },
  )

  it.each([
    "2026-12-01T09:30:00",
    "2026-12-01",
    "tomorrow",
    "2026-13-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-12-01T25:00:00Z",
    "1764581400",
  ])("refuses expiresAt %s with ConfigError", (expiresAt) => {
    expect(() => pending({ kind: "approval", prompt: "p", expiresAt })).toThrow(ConfigError)
    expect(() => pending({ kind: "approval", prompt: "p", expiresAt })).toThrow(/RFC 3339/)
  })

  it.each(["", "has space", "a/b", "x".repeat(201), "naïve", "q?x=1"])("refuses the id %j", (id) => {
    expect(() => pending({ kind: "approval", prompt: "p", id })).toThrow(ConfigError)
  })

  it("accepts ids of letters, digits and . _ : - up to 200 characters", () => {
    for (const id of ["order-42", "a.b_c:d-e", "x".repeat(200)])
      expect(pendingOf(pending({ kind: "approval", prompt: "p", id }))?.id).toBe(id)
  })
})

describe.each(STYLES)("requests describe themselves (%s)", (style) => {
  it("stamps callId, tool and args on a halted tool suspension", async () => {
    const { server } = ctx
    const toolkit = await createToolkit({ extraTools: [pay] })
    server.enqueue({ toolCalls: [{ id: "call_pay", name: "pay", arguments: { amount: 12 } }] })
    const halted = await clientFor(style, server).run("pay", { toolkit })
    // A run given no id carries the one it got, so a resume from `messages` keeps its keys.
    expect(halted.runId).toMatch(/^run-[0-9a-f-]{36}$/)
    expect(halted.pending?.data).toEqual({
      callId: "call_pay",
      tool: "pay",
      args: { amount: 12 },
      runId: halted.runId,
    })
  })

  it("stamps the request a waitFor sees too", async () => {
    const { server } = ctx
    const toolkit = await createToolkit({ extraTools: [pay] })
    const seen: Request[] = []
    server.enqueue({ toolCalls: [{ id: "call_w", name: "pay", arguments: { amount: 3 } }] }, { text: "done" })
    const client = clientFor(style, server, {
      waitFor: (req) => {
        seen.push(req)
        return { id: req.id, ok: true }
      },
    })
    await client.run("pay", { toolkit })
    expect(seen[0]?.data).toEqual({ callId: "call_w", tool: "pay", args: { amount: 3 } })
  })

  it("keeps the keys a tool set itself", async () => {
    const { server } = ctx
    const toolkit = await createToolkit({ extraTools: [labelled] })
    server.enqueue({ toolCalls: [{ id: "call_l", name: "labelled", arguments: { secret: "s" } }] })
    const halted = await clientFor(style, server).run("go", { toolkit })
    expect(halted.pending?.data).toEqual({
      callId: "call_l",
      tool: "billing",
      args: { redacted: true },
      runId: halted.runId,
    })
  })
})

/** A store that records every save's meta, to see what the stored continue passes. */
class RecordingStore extends MemoryStore {
  readonly metas: (SaveMeta | undefined)[] = []
  override async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    this.metas.push(meta)
    return super.save(id, messages, meta)
  }
}

describe.each(STYLES)("the stored continue (%s)", (style) => {
  it("loads the conversation and its request, resumes, and saves back with the claim", async () => {
    const { server } = ctx
    payments = 0
    const store = new RecordingStore()
    const client = clientFor(style, server, { store })
    const toolkit = await createToolkit({ extraTools: [pay] })
    server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: { amount: 5 } }] }, { text: "paid" })
    const halted = await client.ask("pay 5", { id: "order", toolkit })
    const req = halted.pending as Request
    const done = await client.continueRun({
      id: "order",
      answer: { id: req.id, ok: true },
      toolkit,
      claim: "tok",
    })
    expect(done.status).toBe("done")
    expect(payments).toBe(1)
    expect(store.metas.at(-1)).toEqual({ pending: null, claim: "tok" })
    expect(await store.getPending("order")).toBeUndefined()
    expect(await store.get("order")).toEqual(done.messages)
  })

  it("refuses an unknown conversation or one waiting on nothing, saving nothing", async () => {
    const { server } = ctx
    const store = new RecordingStore()
    const client = clientFor(style, server, { store })
    await expect(client.continueRun({ id: "nope", answer: { id: "r", ok: true } })).rejects.toThrow(
      UnknownRequestError,
    )
    await store.save("idle", [])
    await expect(client.continueRun({ id: "idle", answer: { id: "r", ok: true } })).rejects.toThrow(
      /waits on no request/,
    )
    expect(store.metas).toHaveLength(1)
    await expect(client.continueRun({})).rejects.toThrow(ConfigError)
    await expect(client.continueRun({ messages: [], claim: "t" })).rejects.toThrow(ConfigError)
  })

  it("works on a store without getPending when the request is passed in", async () => {
    const { server } = ctx
    const inner = new MemoryStore()
    const bare: ConversationStore = {
      get: (id) => inner.get(id),
      save: (id, m, meta) => inner.save(id, m, meta),
    }
    const client = clientFor(style, server, { store: bare })
    const toolkit = await createToolkit({ extraTools: [pay] })
    server.enqueue({ toolCalls: [{ id: "c2", name: "pay", arguments: { amount: 1 } }] }, { text: "ok" })
    const halted = await client.ask("pay", { id: "b", toolkit })
    const req = halted.pending as Request
    await expect(client.continueRun({ id: "b", answer: { id: req.id, ok: true }, toolkit })).rejects.toThrow(
      UnknownRequestError,
    )
    const done = await client.continueRun({
      id: "b",
      pending: req,
      answer: { id: req.id, ok: true },
      toolkit,
    })
    expect(done.text).toBe("ok")
  })
})
