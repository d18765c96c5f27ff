import { getEventListeners } from "node:events"
import type { Message, Request } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { ClaimLostError } from "../src/errors.js"
import { resumeClaimed } from "../src/resume/claimed-resume.js"
import { SqliteStore } from "../src/sqlite/index.js"

const halted: Message[] = [{ role: "user", content: "pay" }]

/** A store with conversation `id` waiting on a fresh approval request. */
async function waiting(id: string, opTimeoutMs = 5) {
  const store = new SqliteStore({ path: ":memory:", opTimeoutMs })
  const request: Request = { id: `r-${id}`, kind: "approval", prompt: "pay?" }
  await store.save(id, halted, { pending: request })
  return { store, request }
}

describe("resumeClaimed", () => {
  it("runs the resume under the claim; its fenced save consumes it and the decision is kept", async () => {
    const { store, request } = await waiting("c-ok")
    const result = await resumeClaimed(
      store,
      "c-ok",
      { id: request.id, ok: true },
      {},
      async ({ claim, signal }) => {
        expect(claim.request.id).toBe(request.id)
        expect(signal.aborted).toBe(false)
        await store.save("c-ok", [...halted, { role: "assistant", content: "paid" }], {
          pending: null,
          claim: claim.token,
        })
        return "paid"
      },
    )
    expect(result).toBe("paid")
    expect(await store.findRequest(request.id)).toBeUndefined()
    expect(await store.getDecision(request.id)).toEqual({ ok: true })
    await expect(
      resumeClaimed(store, "c-ok", { id: request.id, ok: true }, {}, async () => 0),
    ).rejects.toThrow(/already applied/)
    await store.close()
  })

  it("releases the claim when the resume throws, so the next delivery resumes at once with the first answer", async () => {
    const { store, request } = await waiting("c-throw", 100)
    const lease = { leaseMs: 600_000 }
    await expect(
      resumeClaimed(store, "c-throw", { id: request.id, ok: false, reason: "no" }, lease, async () => {
        throw new Error("the model is down")
      }),
    ).rejects.toThrow("the model is down")
    expect(await store.findRequest(request.id)).toMatchObject({ state: "claimed", attempts: 1 })
    const answer = await resumeClaimed(
      store,
      "c-throw",
      { id: request.id, ok: true },
      lease,
      async ({ claim }) => {
        await store.save("c-throw", halted, { pending: null, claim: claim.token })
        return claim.answer
      },
    )
    // The takeover applies the decision stored with the first claim, not the new answer.
    expect(answer).toEqual({ id: request.id, ok: false, reason: "no" })
    await store.close()
  })

  it("releases the claim for a result `failureOf` names failed, and fails the request after maxAttempts", async () => {
    const { store, request } = await waiting("c-fail", 100)
    const opts = { leaseMs: 600_000, maxAttempts: 2 }
    const failing = () =>
      resumeClaimed(
        store,
        "c-fail",
        { id: request.id, ok: true },
        opts,
        async () => ({ status: "error" }),
        (r) => (r.status === "error" ? new Error("the cascade failed") : undefined),
      )
    expect(await failing()).toEqual({ status: "error" })
    expect(await failing()).toEqual({ status: "error" })
    expect(await store.listFailed()).toMatchObject([
      { request: { id: request.id }, lastError: { message: "the cascade failed" } },
    ])
    await expect(failing()).rejects.toThrow(/failed too often.*retryFailed/)
    await store.close()
  })

  it("names an answer to another request a mismatch, claiming nothing", async () => {
    const { store, request } = await waiting("c-mismatch")
    await expect(
      resumeClaimed(store, "c-mismatch", { id: "someone-else", ok: true }, {}, async () => 0),
    ).rejects.toMatchObject({ name: "AnswerMismatchError" })
    expect(await store.findRequest(request.id)).toMatchObject({ state: "open", attempts: 0 })
    await store.close()
  })

  it("aborts the resume through its signal when the claim is lost, and throws ClaimLostError", async () => {
    const { store, request } = await waiting("c-lost")
    const error = await resumeClaimed(
      store,
      "c-lost",
      { id: request.id, ok: true },
      { leaseMs: 10 },
      async ({ claim, signal }) => {
        // The conversation is deleted behind the resume's back: the next renewal finds no claim.
        expect(claim.token).not.toBe("")
        await store.deleteConversation("c-lost")
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
        throw signal.reason
      },
    ).catch((e: unknown) => e)
    expect(ClaimLostError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ requestId: request.id, conversationId: "c-lost" })
    await store.close()
  })

  it("aborts the resume with its caller's signal and reason, and leaves no listener on that signal", async () => {
    const { store, request } = await waiting("c-outer")
    const outer = new AbortController()
    const reason = new Error("the caller stopped")
    const seen = await resumeClaimed(
      store,
      "c-outer",
      { id: request.id, ok: true },
      { signal: outer.signal },
      async ({ signal }) => {
        expect(signal.aborted).toBe(false)
        outer.abort(reason)
        return { aborted: signal.aborted, reason: signal.reason as unknown }
      },
    )
    expect(seen).toEqual({ aborted: true, reason })
    // The resume is over: nothing of it stays attached to a signal that may live on.
    const kept = new AbortController()
    await store.save("c-outer", halted, { pending: { ...request, id: "r-c-outer-2" } })
    await resumeClaimed(
      store,
      "c-outer",
      { id: "r-c-outer-2", ok: true },
      { signal: kept.signal },
      async () => 0,
    )
    expect(getEventListeners(kept.signal, "abort")).toHaveLength(0)
    // An already aborted caller's signal: the resume's is aborted from the start.
    await store.save("c-outer", halted, { pending: { ...request, id: "r-c-outer-3" } })
    const early = await resumeClaimed(
      store,
      "c-outer",
      { id: "r-c-outer-3", ok: true },
      { signal: outer.signal },
      async ({ signal }) => signal.reason as unknown,
    )
    expect(early).toBe(reason)
    await store.close()
  })
})
