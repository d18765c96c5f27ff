import { createClient } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { type DurableStore, openStore } from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type RelayProxyOptions, createRelayProxy } from "../src/app.js"
import { chat, fnTool, proxyFor } from "./helpers.js"

// The resume path is durable's exactly-once resume: what it adds over a bare claim is pinned here.
let server: FakeLLMServer
let store: DurableStore
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterEach(async () => {
  server.reset()
  await store.close()
})
afterAll(() => server.close())

function proxy(options: Partial<RelayProxyOptions> = {}) {
  return proxyFor("openai", server, store, options)
}

/** Halts a conversation on one relay call and returns the follow-up carrying result `R`. */
async function halted(app: ReturnType<typeof proxy>) {
  const messages: unknown[] = [{ role: "user", content: "go" }]
  const first = await chat(app, { messages, tools: [fnTool("t")] })
  expect(first.status).toBe(200)
  const call = first.json.choices[0].message
  return {
    conversation: first.headers.get("x-relay-conversation") as string,
    follow: {
      messages: [...messages, call, { role: "tool", tool_call_id: call.tool_calls[0].id, content: "R" }],
    },
  }
}

describe("the relay proxy's claimed resume", () => {
  it("refuses a client that does not use the proxy's store, naming the fix", async () => {
    store = await openStore("sqlite::memory:")
    const client = createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "k" })
    expect(() => createRelayProxy({ client, store })).toThrow(/createClient\(\{ \.\.\., store \}\)/)
  })

  it("checkpoints the caller's results under the claim: a failed resume keeps them in the transcript", async () => {
    store = await openStore("sqlite::memory:")
    server.enqueue({ toolCalls: [{ id: "c1", name: "t", arguments: {} }] }, { status: 503, text: "later" })
    const app = proxy()
    const { conversation, follow } = await halted(app)
    expect((await chat(app, follow)).status).toBe(503)
    const transcript = (await store.get(conversation)) ?? []
    expect(transcript.at(-1)).toMatchObject({ role: "tool", content: "R" })
    // Still waiting: the results are applied once the resumed run is saved.
    expect(await store.getPending(conversation)).toBeDefined()
  })

  it("counts failed attempts: after claimMaxAttempts the results get a 409 that says not to retry", async () => {
    store = await openStore("sqlite::memory:")
    server.enqueue(
      { toolCalls: [{ id: "c1", name: "t", arguments: {} }] },
      { status: 500, text: "broken" },
      { status: 500, text: "broken" },
      { text: "never asked" },
    )
    const app = proxy({ claimMaxAttempts: 2 })
    const { follow } = await halted(app)
    expect((await chat(app, follow)).status).toBe(500)
    expect((await chat(app, follow)).status).toBe(500)
    const refused = await chat(app, follow)
    expect(refused.status).toBe(409)
    expect(refused.headers.get("x-should-retry")).toBe("false")
    expect(refused.json.error.message).toMatch(/failed too often.*retryFailed/)
    expect(server.requests).toHaveLength(3)
    expect(await store.listFailed()).toHaveLength(1)
  })

  it("renews the claim while the model answers: a duplicate delivery after the lease is still refused", async () => {
    // A 150 ms lease (the store's deadline is 60 ms) is renewed every 50 ms while the model takes 900 ms.
    store = new SqliteStore({ path: ":memory:", opTimeoutMs: 60 })
    server.enqueue({ toolCalls: [{ id: "c1", name: "t", arguments: {} }] }, { text: "done", delayMs: 900 })
    const app = proxy({ claimLeaseMs: 150 })
    const { follow } = await halted(app)
    const first = chat(app, follow)
    while (server.requests.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
    // Two leases later: without renewals the duplicate would take the claim over.
    await new Promise((resolve) => setTimeout(resolve, 350))
    const duplicate = await chat(app, follow)
    expect(duplicate.status).toBe(409)
    expect(duplicate.headers.get("retry-after")).toBe("1")
    expect((await first).json.choices[0].message.content).toBe("done")
    expect(server.requests).toHaveLength(2)
  })

  it("pendingTtlMs is the halted request's expiresAt, judged by the claim; a halt again gets a new one", async () => {
    store = await openStore("sqlite::memory:")
    server.enqueue(
      { toolCalls: [{ id: "c1", name: "t", arguments: {} }] },
      { toolCalls: [{ id: "c2", name: "t", arguments: {} }] },
    )
    const app = proxy({ pendingTtlMs: 60_000 })
    const started = Date.now()
    const { conversation, follow } = await halted(app)
    const first = await store.getPending(conversation)
    expect(Date.parse(first?.expiresAt ?? "")).toBeGreaterThanOrEqual(started + 60_000)
    expect((await chat(app, follow)).status).toBe(200)
    const again = await store.getPending(conversation)
    expect(again?.id).not.toBe(first?.id)
    expect(Date.parse(again?.expiresAt ?? "")).toBeGreaterThanOrEqual(Date.parse(first?.expiresAt ?? ""))
  })
})
