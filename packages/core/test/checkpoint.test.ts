import { describe, expect, it } from "vitest"
import { AnswerExpiredError, AnswerInvalidError } from "../src/errors.js"
import { assertAnswer } from "../src/suspension/answer-shape.js"
import { pending } from "../src/suspension/pending.js"
import { MemoryStore, type SaveMeta } from "../src/store/conversation-store.js"
import { defineTool } from "../src/tools/define-tool.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Message, Request } from "../src/types.js"
import { transcriptProblems } from "../src/testing/index.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

/** A store that records every save's meta and how many messages it held. */
class RecordingStore extends MemoryStore {
  readonly saves: { length: number; meta: SaveMeta | undefined }[] = []
  constructor(readonly checkpoints?: boolean) {
    super()
  }
  override async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    this.saves.push({ length: messages.length, meta })
    await super.save(id, messages, meta)
  }
}

function payTool(runs: string[]) {
  return defineTool({
    name: "pay",
    description: "pay",
    inputSchema: { type: "object", properties: { n: { type: "number" } } },
    run: ({ n }, toolCtx) => {
      runs.push(toolCtx.answer ? `answered:${toolCtx.idempotencyKey}` : "asked")
      return toolCtx.answer?.ok ? `paid ${n}` : pending({ kind: "approval", prompt: `pay ${n}?` })
    },
  })
}

describe.each(STYLES)("the stored path's tool-result checkpoint (%s)", (style) => {
  it("saves settled results before the next LLM request, fenced by the claim but not consuming it", async () => {
    const { server } = ctx
    const runs: string[] = []
    const store = new RecordingStore(true)
    const client = clientFor(style, server, { store })
    const toolkit = await createToolkit({ extraTools: [payTool(runs)] })
    server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: { n: 5 } }] })
    const halted = await client.ask("pay 5", { id: "conv", toolkit })
    expect(halted.status).toBe("pending")
    const saved = store.saves.length

    let savesWhenAsked = -1
    server.enqueue(() => {
      savesWhenAsked = store.saves.length
      return { text: "done" }
    })
    const answer = { id: (halted.pending as Request).id, ok: true }
    const resumed = await client.continueRun({ id: "conv", answer, toolkit, claim: "tok" })
    expect(resumed.status).toBe("done")
    // The checkpoint came before the model was asked again; then the final save.
    const after = store.saves.slice(saved)
    expect(after.map((s) => s.meta)).toEqual([
      { checkpoint: true, claim: "tok" },
      { pending: null, claim: "tok" },
    ])
    expect(savesWhenAsked).toBe(saved + 1)
  })

  it("a resume from a checkpointed transcript runs no tool again and asks the model once", async () => {
    const { server } = ctx
    const runs: string[] = []
    const store = new RecordingStore(true)
    const client = clientFor(style, server, { store })
    const toolkit = await createToolkit({ extraTools: [payTool(runs)] })
    server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: { n: 5 } }] })
    const halted = await client.ask("pay 5", { id: "conv", toolkit })
    const answer = { id: (halted.pending as Request).id, ok: true }
    // The worker dies at the LLM request that follows the checkpoint.
    server.enqueue(
      { status: 500, text: "boom" },
      { status: 500, text: "boom" },
      { status: 500, text: "boom" },
    )
    const failure = await client.continueRun({ id: "conv", answer, toolkit }).catch((e) => e)
    expect(String(failure)).toMatch(/500/)
    expect(runs).toEqual(["asked", "answered:conv:c1"])
    expect(await store.getPending("conv")).toEqual(halted.pending)

    server.enqueue({ text: "finished" })
    const resumed = await client.continueRun({ id: "conv", answer, toolkit })
    expect(resumed.status).toBe("done")
    expect(runs).toEqual(["asked", "answered:conv:c1"])
    expect(transcriptProblems(resumed.messages)).toEqual([])
    expect(server.requests.length).toBe(5)
  })

  it("is off for stores that do not declare checkpoints, and `checkpoint: false` turns it off", async () => {
    const { server } = ctx
    const store = new RecordingStore()
    const client = clientFor(style, server, { store })
    const toolkit = await createToolkit({ extraTools: [payTool([])] })
    server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: { n: 5 } }] })
    const halted = await client.ask("pay 5", { id: "conv", toolkit })
    server.enqueue({ text: "done" })
    await client.continueRun({
      id: "conv",
      answer: { id: (halted.pending as Request).id, ok: true },
      toolkit,
    })
    expect(store.saves.map((s) => s.meta?.checkpoint)).toEqual([undefined, undefined])

    const durable = new RecordingStore(true)
    const other = clientFor(style, server, { store: durable })
    server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: { n: 5 } }] }, { text: "x" })
    await other.ask("pay 5", { id: "c", toolkit, checkpoint: false })
    expect(durable.saves.map((s) => s.meta?.checkpoint)).toEqual([undefined])
  })

  it("durable ask checkpoints each settled turn", async () => {
    const { server } = ctx
    const store = new RecordingStore(true)
    const echo = defineTool({
      name: "echo",
      description: "e",
      inputSchema: { type: "object" },
      run: () => "ok",
    })
    const client = clientFor(style, server, { store })
    server.enqueue({ toolCalls: [{ id: "e1", name: "echo", arguments: {} }] }, { text: "done" })
    await client.ask("go", { id: "a", toolkit: await createToolkit({ extraTools: [echo] }) })
    expect(store.saves.map((s) => s.meta)).toEqual([{ checkpoint: true }, { pending: null }])
  })
})

describe("answers are validated at the entry (AnswerInvalidError, nothing changed)", () => {
  it.each([
    [null, /must be an object, got null/],
    ["yes", /must be an object/],
    [{ ok: true }, /answer.id must be a non-empty string/],
    [{ id: "", ok: true }, /answer.id must be a non-empty string/],
    [{ id: "a", ok: "yes" }, /answer.ok must be a boolean/],
    [{ id: "a", ok: true, data: [1] }, /answer.data must be a plain object, got an array/],
    [{ id: "a", ok: true, data: new Date() }, /answer.data must be a plain object/],
    [{ id: "a", ok: false, reason: 3 }, /answer.reason must be a string/],
  ])("%j", (value, message) => {
    expect(() => assertAnswer(value)).toThrow(AnswerInvalidError)
    expect(() => assertAnswer(value)).toThrow(message)
  })

  it("accepts the wire shape", () => {
    expect(() => assertAnswer({ id: "a", ok: true, data: { x: 1 }, reason: "r" })).not.toThrow()
    expect(() => assertAnswer(JSON.parse('{"id":"a","ok":false}'))).not.toThrow()
  })

  it("continueRun refuses `answer: null` with the typed error and saves nothing", async () => {
    const store = new RecordingStore(true)
    const client = clientFor("openai", ctx.server, { store })
    await expect(
      client.continueRun({ id: "x", answer: null as never, pending: { id: "p", kind: "k", prompt: "p" } }),
    ).rejects.toBeInstanceOf(AnswerInvalidError)
    expect(store.saves).toEqual([])
  })
})

describe("expiry", () => {
  it("an unparseable expiresAt counts as past: ok:true is refused, ok:false is accepted", async () => {
    const { server } = ctx
    const store = new RecordingStore()
    const client = clientFor("openai", server, { store })
    const tool = defineTool({
      name: "pay",
      description: "pay",
      inputSchema: { type: "object" },
      run: (_args, toolCtx) =>
        toolCtx.answer
          ? "paid"
          : {
              output: "pay?",
              isError: true,
              metadata: { pending: { id: "r1", kind: "approval", prompt: "pay?", expiresAt: "soon" } },
            },
    })
    const toolkit = await createToolkit({ extraTools: [tool] })
    server.enqueue({ toolCalls: [{ id: "c1", name: "pay", arguments: {} }] })
    await client.ask("pay", { id: "conv", toolkit })
    await expect(
      client.continueRun({ id: "conv", answer: { id: "r1", ok: true }, toolkit }),
    ).rejects.toBeInstanceOf(AnswerExpiredError)
    server.enqueue({ text: "ok, not paid" })
    const declined = await client.continueRun({
      id: "conv",
      answer: { id: "r1", ok: false, reason: "expired" },
      toolkit,
    })
    expect(declined.status).toBe("done")
  })
})
