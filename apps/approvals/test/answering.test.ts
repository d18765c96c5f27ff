import type { Answer } from "@toolnexus/core"
import { afterAll, describe, expect, it } from "vitest"
import { createAnswering } from "../src/answering.js"
import { createEventHub } from "../src/events.js"
import { createHistory } from "../src/history.js"
import type { InboxEntry, InboxStore } from "../src/host-inbox.js"
import { HttpError } from "../src/http-error.js"
import type { Notification } from "../src/notifier.js"
import { createRateLimiter } from "../src/security/rate-limit.js"
import { sqliteFiles } from "./support.js"

const files = sqliteFiles()
afterAll(() => files.cleanup())

const ENTRY = {
  request: { id: "pnd-slow-1", kind: "approval", prompt: "Refund order S-1?" },
  conversationId: "run-slow-1",
} as unknown as InboxEntry

/** An inbox holding one open request whose delivery ends as `deliver` says. */
function inboxDelivering(deliver: (answer: Answer) => Promise<never>): InboxStore {
  return {
    findRequest: async (id) => (id === ENTRY.request.id ? ENTRY : undefined),
    deliver,
  } as Partial<InboxStore> as InboxStore
}

function answeringOver(inbox: InboxStore) {
  const history = createHistory({ store: files.store() })
  const notified: Notification[] = []
  const answering = createAnswering({
    inbox,
    history,
    hub: createEventHub({ fingerprint: async () => ({ inbox: "", history: "" }), pollMs: 60_000 }),
    limiter: createRateLimiter({ limit: 10, windowMs: 60_000 }),
    notify: (n) => notified.push(n),
    onError: (error) => {
      throw error
    },
  })
  return { answering, history, notified }
}

describe("an answer whose run outlives the inbox's wait (504 run_pending)", () => {
  it("is recorded and announced as taken, the run still going; the caller still hears the 504", async () => {
    const { answering, history, notified } = answeringOver(
      inboxDelivering(async () => {
        throw new HttpError(504, "run_pending", "run run-slow-1 has not settled yet")
      }),
    )
    await expect(
      answering.answer({ id: "pnd-slow-1", ok: true }, { name: "alice", via: "api" }),
    ).rejects.toMatchObject({ status: 504, code: "run_pending" })
    const [entry] = await history.list()
    expect(entry).toMatchObject({
      requestId: "pnd-slow-1",
      runId: "run-slow-1",
      answeredBy: "alice",
      decision: { ok: true },
      outcome: { status: "running" },
    })
    expect(notified).toEqual([
      expect.objectContaining({
        type: "request.answered",
        requestId: "pnd-slow-1",
        ok: true,
        outcome: "running",
      }),
    ])
  })

  it("a failure of the resume itself stays an error, with no answered notification", async () => {
    const { answering, history, notified } = answeringOver(
      inboxDelivering(async () => {
        throw new Error("store down")
      }),
    )
    await expect(
      answering.answer({ id: "pnd-slow-1", ok: true }, { name: "alice", via: "api" }),
    ).rejects.toThrow("store down")
    expect((await history.list())[0]?.outcome.status).toBe("error")
    expect(notified).toEqual([])
  })
})
