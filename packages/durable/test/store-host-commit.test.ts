import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Client, type RunResult, createToolkit, defineTool, hostAgent, pending } from "@toolnexus/core"
import Database from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { type DurableStore, createMemoryStore, createStoreHost } from "../src/index.js"
import { SqliteStore } from "../src/sqlite/index.js"
import { modelClient, useFakeModel } from "./host-fixture.js"

// §17 "a resume writes once", for a store host's turns: a conversation run's final save and its
// run record (what `result` answers in another process: usage, tool calls, the pending request)
// are written in one store call. A failure of that call leaves neither: the record never tells
// of a turn the transcript does not hold, nor the transcript of one the record does not.

const model = useFakeModel({ reset: true })
const dir = mkdtempSync(join(tmpdir(), "tnx-host-commit-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

/**
 * A SQLite store whose database refuses, with `failing()`, every write of a settled record of
 * run `runId` (state done or pending): the failure comes from inside the statement that writes
 * the record, after whatever the same transaction wrote before it.
 */
function sqliteStore(runId: string): { store: DurableStore; failing(): void } {
  const db = new Database(join(dir, `host-${files++}.db`))
  const store = new SqliteStore({ db })
  const failing = () => {
    const when = `NEW.key = 'host-run/${runId}' AND (NEW.body LIKE '%"state":"done"%' OR NEW.body LIKE '%"state":"pending"%')`
    db.exec(`
      CREATE TRIGGER refuse_insert BEFORE INSERT ON tnx_snapshots WHEN ${when}
        BEGIN SELECT RAISE(ABORT, 'the record write failed'); END;
      CREATE TRIGGER refuse_update BEFORE UPDATE ON tnx_snapshots WHEN ${when}
        BEGIN SELECT RAISE(ABORT, 'the record write failed'); END;
    `)
  }
  return { store, failing }
}

const approve = defineTool({
  name: "approve",
  description: "asks first",
  inputSchema: { type: "object", properties: {} },
  run: (_args, ctx) => (ctx.answer ? "approved" : pending({ kind: "approval", prompt: "Go?" })),
})

/** The last assistant message's text of a stored transcript. */
function lastText(messages: unknown[] | undefined): unknown {
  const last = messages?.filter((m) => (m as { role?: string }).role === "assistant").at(-1)
  return (last as { content?: unknown } | undefined)?.content
}

describe("a store host's turn writes its transcript and its run record in one store call", () => {
  it("a turn whose commit fails leaves the transcript and the record as the turn before left them", async () => {
    const { store, failing } = sqliteStore("r1")
    const host = createStoreHost({
      store,
      agents: [hostAgent({ name: "a", client: modelClient(model(), store) })],
      sweepEveryMs: false,
    })
    try {
      model().enqueue({ text: "first" })
      await host.start("a", "r1", "one")
      expect(await host.result("r1")).toMatchObject({ status: "done", text: "first" })
      const before = await store.get("r1")
      expect(lastText(before)).toBe("first")

      failing()
      model().enqueue({ text: "second" })
      await expect(host.send("r1", "two")).rejects.toThrow(/the record write failed/)
      // Neither written: the transcript ends at the first turn, and so does the record.
      expect(await store.get("r1")).toEqual(before)
      expect(await store.getSnapshot("host-run/r1")).toMatchObject({
        state: "done",
        result: { status: "done", text: "first" },
      })
    } finally {
      await host.close()
      await store.close()
    }
  })

  it("a resume whose commit fails leaves the request waiting, its record pending and the answer unapplied", async () => {
    const { store, failing } = sqliteStore("r2")
    const toolkit = await createToolkit({ extraTools: [approve] })
    const host = createStoreHost({
      store,
      agents: [hostAgent({ name: "a", client: modelClient(model(), store), toolkit })],
      sweepEveryMs: false,
    })
    try {
      model().enqueue({ toolCalls: [{ id: "c1", name: "approve", arguments: {} }] })
      await host.start("a", "r2", "go")
      const parked = (await host.result("r2")) as RunResult
      const request = parked.pending
      if (!request) throw new Error("the run did not park")
      const before = await store.get("r2")

      failing()
      model().enqueue({ text: "approved and done" })
      await expect(host.deliverAnswer({ id: request.id, ok: true })).rejects.toThrow(
        /the record write failed/,
      )
      // The resume wrote nothing but its checkpoint (the repaired call's result, under the claim):
      // the conversation still waits on the request, the record still says so, nothing decided.
      expect(await store.getPending("r2")).toMatchObject({ id: request.id })
      expect(lastText(await store.get("r2"))).toEqual(lastText(before))
      expect(await store.getSnapshot("host-run/r2")).toMatchObject({
        state: "pending",
        result: { status: "pending", pending: { id: request.id } },
      })
      expect(await store.getDecision(request.id)).toBeUndefined()
    } finally {
      await host.close()
      await store.close()
    }
  })

  it("a client that does not commit the record (it ignores commitSnapshot) gets it written after its run", async () => {
    const store = createMemoryStore()
    const real = modelClient(model(), store)
    const writes: string[] = []
    const counted = new Proxy(store, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver)
        if (typeof value !== "function") return value
        return (...args: unknown[]) => {
          if (key === "save" || key === "putSnapshot" || key === "commitResume") writes.push(String(key))
          return value.apply(target, args)
        }
      },
    })
    // A client of the host's store that saves its turns plainly, as one without the hook would.
    const client: Client = {
      ...real,
      conversationStore: () => counted,
      ask: (prompt, opts) => real.ask(prompt, { ...opts, commitSnapshot: undefined }),
    }
    const host = createStoreHost({
      store: counted,
      agents: [hostAgent({ name: "a", client })],
      sweepEveryMs: false,
    })
    try {
      model().enqueue({ text: "hello" })
      await host.start("a", "r3", "hi")
      expect(await host.result("r3")).toMatchObject({ status: "done", text: "hello" })
      expect(writes).toEqual(["putSnapshot"])
      expect(await store.getSnapshot("host-run/r3")).toMatchObject({
        state: "done",
        result: { text: "hello" },
      })
    } finally {
      await host.close()
    }
  })
})
