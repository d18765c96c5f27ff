import { createClient } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { askWithAnswer, createMemoryStore } from "../src/index.js"
import { MemoryData, MemoryStore } from "../src/memory/memory-store.js"
import { readWriteStats } from "../src/store-engine/write-stats.js"
import { describeStoreContract } from "../src/testing/store-contract.js"
import { type ResumeBackend, describeResumeSuite } from "./resume-suite.js"
import { describeTreeIdentitySuite } from "./tree-identity-suite.js"

// One "database" for the suite: two stores on it behave like two processes.
const data = new MemoryData()
const conversation = (id: string) => {
  const conv = data.conversations.get(id)
  if (!conv) throw new Error(`no conversation ${id}`)
  return conv
}

describeStoreContract("MemoryStore", {
  create: async (extra) => new MemoryStore({ opTimeoutMs: 10, ...extra }, data),
  writeStats: readWriteStats,
  corrupt: async (_store, id, index) => {
    conversation(id).bodies[index] = "not json {"
  },
  corruptPending: async (_store, id) => {
    conversation(id).pending = "{not json"
  },
})

describe("createMemoryStore", () => {
  it("is a durable store of its own: claims are exactly-once, and nothing is shared with another", async () => {
    const a = createMemoryStore()
    const b = createMemoryStore()
    const request = { id: "r-1", kind: "approval", prompt: "?" }
    await a.save("c-1", [{ role: "user", content: "hi" }], { pending: request })
    expect(await b.get("c-1")).toBeUndefined()
    const claim = await a.claimAnswer("c-1", { id: "r-1", ok: true })
    await expect(a.claimAnswer("c-1", { id: "r-1", ok: false })).rejects.toMatchObject({
      code: "TNX_ANSWER_CONFLICT",
    })
    await a.save("c-1", [{ role: "user", content: "hi" }], { pending: null, claim: claim.token })
    expect(await a.getDecision("r-1")).toEqual({ ok: true })
  })
})

// The resume paths (askWithAnswer, deliverAnswer, runtimes, sweeps) on the memory store, as on SQLite.
const resumeData = new MemoryData()
const memory: ResumeBackend = {
  open: async (extra) => new MemoryStore({ opTimeoutMs: 200, ...extra }, resumeData),
}
describeResumeSuite("MemoryStore", memory)
describeTreeIdentitySuite("MemoryStore", memory)

describe("askWithAnswer over a store without claims", () => {
  it("is a ConfigError naming the fix, and nothing runs: one resume path, the claimed one", async () => {
    const client = createClient({
      baseUrl: "http://127.0.0.1:9/v1",
      style: "openai",
      model: "m",
      apiKey: "k",
    })
    await client.conversationStore().save("c-1", [{ role: "user", content: "hi" }], {
      pending: { id: "r-1", kind: "approval", prompt: "?" },
    })
    await expect(askWithAnswer(client, { id: "c-1", answer: { id: "r-1", ok: true } })).rejects.toMatchObject(
      {
        code: "TNX_CONFIG",
        message: expect.stringMatching(/durable store/),
      },
    )
    expect((await client.conversationStore().get("c-1"))?.length).toBe(1)
  })
})
