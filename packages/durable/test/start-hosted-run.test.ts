// A conversation turn of `startHostedRun` with no transcript to save and no deadline is the
// ask's promise and one `then` (no async frame of its own): its failures must still reject,
// never throw, and its outcome must be what the async path gave.
import { ConfigError, createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMemoryStore, startHostedRun } from "../src/index.js"

let server: FakeLLMServer
beforeAll(async () => {
  server = await createFakeLLMServer()
})
afterAll(() => server.close())

function clientOn(store: ReturnType<typeof createMemoryStore>) {
  return createClient({ baseUrl: `${server.url}/v1`, style: "openai", model: "m", apiKey: "sk-test", store })
}

describe("startHostedRun of a conversation", () => {
  it("resolves the conversation's outcome and saves the turn", async () => {
    server.enqueue({ text: "hello" })
    const store = createMemoryStore()
    const outcome = await startHostedRun(store, { client: clientOn(store) }, "run-1", "hi")
    expect(outcome.kind).toBe("conversation")
    expect(outcome.result.text).toBe("hello")
    expect(await store.get("run-1")).toHaveLength(2)
  })

  it("rejects, not throws, when the client's ask throws", async () => {
    const store = createMemoryStore()
    const client = clientOn(store)
    const failing = {
      ...client,
      conversationStore: () => store,
      ask: () => {
        throw new ConfigError("ask broke")
      },
    }
    let returned: Promise<unknown> | undefined
    expect(() => {
      returned = startHostedRun(store, { client: failing }, "run-2", "hi")
    }).not.toThrow()
    await expect(returned).rejects.toThrow("ask broke")
  })

  it("rejects, not throws, when the client uses another store", async () => {
    const store = createMemoryStore()
    let returned: Promise<unknown> | undefined
    expect(() => {
      returned = startHostedRun(store, { client: clientOn(createMemoryStore()) }, "run-3", "hi")
    }).not.toThrow()
    await expect(returned).rejects.toBeInstanceOf(ConfigError)
  })

  it("stamps a deadline on a parked turn's request (the async path)", async () => {
    server.enqueue({ toolCalls: [{ name: "approve", arguments: {} }] })
    const approve = defineTool({
      name: "approve",
      description: "Needs a human",
      inputSchema: { type: "object", properties: {} },
      run: () => pending({ kind: "approval", prompt: "ok?" }),
    })
    const store = createMemoryStore()
    const toolkit = await createToolkit({ extraTools: [approve] })
    const expiresAt = "2099-01-01T00:00:00.000Z"
    const outcome = await startHostedRun(store, { client: clientOn(store), toolkit }, "run-4", "hi", {
      expiresAt,
    })
    expect(outcome.result.status).toBe("pending")
    expect((outcome.result as { pending?: { expiresAt?: string } }).pending?.expiresAt).toBe(expiresAt)
    expect((await store.getPending("run-4"))?.expiresAt).toBe(expiresAt)
  })
})
