import { describe, expect, it } from "vitest"
import { ConfigError } from "../src/errors.js"
import {
  type CommittedSnapshot,
  type ConversationStore,
  MemoryStore,
  type SaveMeta,
} from "../src/store/conversation-store.js"
import { createToolkit } from "../src/tools/toolkit.js"
import type { Message } from "../src/types.js"
import { approve, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()

type Commit = Parameters<NonNullable<ConversationStore["commitResume"]>>[0]

/** A memory store with `commitResume`, recording each write call; `failCommit` makes commits throw. */
class CommittingStore extends MemoryStore {
  readonly writes: string[] = []
  readonly snapshots = new Map<string, unknown>()
  failCommit = false
  override async save(id: string, messages: Message[], meta?: SaveMeta): Promise<void> {
    this.writes.push(meta?.checkpoint ? `checkpoint ${id}` : `save ${id}`)
    await super.save(id, messages, meta)
  }
  async commitResume(commit: Commit): Promise<void> {
    this.writes.push(`commit ${commit.saves.map((s) => s.id).join(",")} + ${commit.snapshot?.key}`)
    // All or nothing: a failing commit writes neither the saves nor the snapshot.
    if (this.failCommit) throw new Error("the commit failed")
    for (const { id, messages, meta } of commit.saves) await super.save(id, messages, meta)
    if (commit.snapshot) this.snapshots.set(commit.snapshot.key, commit.snapshot.value)
  }
}

const record = (result: { status: string; text: string }): CommittedSnapshot => ({
  key: "record/c",
  value: { status: result.status, text: result.text },
})

describe("commitSnapshot: the final save writes a snapshot in the same store call", () => {
  it("ask: one commit call carries the transcript and the snapshot built from the result; no plain save", async () => {
    const { server } = ctx
    const store = new CommittingStore()
    server.enqueue({ text: "hello" })
    const result = await clientFor("openai", server, { store }).ask("hi", {
      id: "c",
      commitSnapshot: record,
    })
    expect(result.text).toBe("hello")
    expect(store.writes).toEqual(["commit c + record/c"])
    expect(store.snapshots.get("record/c")).toEqual({ status: "done", text: "hello" })
    expect(await store.get("c")).toEqual(result.messages)
  })

  it("a halted run's commit carries its pending request; a checkpoint before it writes no snapshot", async () => {
    const { server } = ctx
    const store = new CommittingStore()
    const toolkit = await createToolkit({ extraTools: [approve] })
    server.enqueue({ toolCalls: [{ id: "a1", name: "approve", arguments: { what: "x" } }] })
    const client = clientFor("openai", server, { store })
    const halted = await client.ask("go", { id: "c", toolkit, commitSnapshot: record })
    expect(halted.status).toBe("pending")
    expect(store.writes).toEqual(["commit c + record/c"])
    expect(await store.getPending("c")).toEqual(halted.pending)

    store.writes.length = 0
    server.enqueue({ text: "done" })
    const pendingRequest = halted.pending
    if (!pendingRequest) throw new Error("no pending request")
    const resumed = await client.continueRun({
      id: "c",
      toolkit,
      answer: { id: pendingRequest.id, ok: true },
      checkpoint: true,
      commitSnapshot: record,
    })
    expect(resumed.status).toBe("done")
    expect(store.writes).toEqual(["checkpoint c", "commit c + record/c"])
    expect(store.snapshots.get("record/c")).toEqual({ status: "done", text: "done" })
    expect(await store.getPending("c")).toBeUndefined()
  })

  it("a hook returning undefined makes the final save a plain one", async () => {
    const { server } = ctx
    const store = new CommittingStore()
    server.enqueue({ text: "hello" })
    await clientFor("openai", server, { store }).ask("hi", { id: "c", commitSnapshot: () => undefined })
    expect(store.writes).toEqual(["save c"])
  })

  it("a failing commit leaves neither the transcript nor the snapshot", async () => {
    const { server } = ctx
    const store = new CommittingStore()
    store.failCommit = true
    server.enqueue({ text: "hello" })
    const client = clientFor("openai", server, { store })
    await expect(client.ask("hi", { id: "c", commitSnapshot: record })).rejects.toThrow("the commit failed")
    expect(await store.get("c")).toBeUndefined()
    expect(store.snapshots.size).toBe(0)
  })

  it("a store without commitResume is refused with ConfigError before any request (never two writes)", async () => {
    const { server } = ctx
    const store = new MemoryStore()
    const before = server.requests.length
    const client = clientFor("openai", server, { store })
    await expect(client.ask("hi", { id: "c", commitSnapshot: record })).rejects.toBeInstanceOf(ConfigError)
    await expect(
      client.continueRun({ id: "c", answer: { id: "r", ok: true }, commitSnapshot: record }),
    ).rejects.toBeInstanceOf(ConfigError)
    expect(server.requests.length).toBe(before)
    expect(await store.get("c")).toBeUndefined()
  })

  it("without a stored conversation it is refused: ask without `id`, continueRun with `messages`", async () => {
    const { server } = ctx
    const client = clientFor("openai", server, { store: new CommittingStore() })
    await expect(client.ask("hi", { commitSnapshot: record })).rejects.toBeInstanceOf(ConfigError)
    await expect(client.continueRun({ messages: [], commitSnapshot: record })).rejects.toBeInstanceOf(
      ConfigError,
    )
    await expect(
      client.ask("hi", { id: "c", commitSnapshot: "no" as unknown as () => undefined }),
    ).rejects.toBeInstanceOf(ConfigError)
  })
})
