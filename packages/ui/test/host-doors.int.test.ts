import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { HttpAgent } from "@ag-ui/client"
import { type Client, MemoryStore, type RunHost, createToolkit, hostAgent } from "@toolnexus/core"
import { type DurableStore, createMemoryStore, createStoreHost, openStore } from "@toolnexus/durable"
import { PostgresStore } from "@toolnexus/durable/postgres"
import { RedisStore } from "@toolnexus/durable/redis"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { lastAssistantMessageIsCompleteWithApprovalResponses } from "ai"
import { afterAll, describe, expect, it } from "vitest"
import { createAgUiHandler } from "../src/ag-ui/index.js"
import { createChatHandler } from "../src/ai-sdk/index.js"
import {
  approvalIdOf,
  chatAt,
  chunksOf,
  clientOf,
  messageOf,
  postRaw,
  refundTools,
  responded,
  serve,
  settled,
  textOf,
  useFakeModel,
  userMessage,
} from "./helpers.js"

// §17 "Doors take a host": both handlers given `{ host, agent }` over createStoreHost on every
// backend. The AI SDK's own Chat and the real @ag-ui/client HttpAgent drive them; an approved
// request runs its tool once, and a second answer to it gets the conflict contract (409 with
// the first decision; AG-UI: one RUN_ERROR TNX_ANSWER_CONFLICT).

const env = useFakeModel("host-doors")
const pgUrl = process.env.TOOLNEXUS_TEST_PG_URL
const redisUrl = process.env.TOOLNEXUS_TEST_REDIS_URL
const suffix = randomBytes(5).toString("hex")
const pgSchema = `ui_host_${suffix}`
const redisPrefix = `tnx-ui-host-${suffix}:`
const cleanups: (() => Promise<void>)[] = []

afterAll(async () => {
  // Hosts and stores first (pushed as they open), then the schema and keys they used.
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
  if (pgUrl) {
    const pg = createRequire(import.meta.url)("pg") as {
      Pool: new (o: object) => { query(sql: string): Promise<unknown>; end(): Promise<void> }
    }
    const admin = new pg.Pool({ connectionString: pgUrl })
    try {
      await admin.query(`DROP SCHEMA IF EXISTS "${pgSchema}" CASCADE`)
    } finally {
      await admin.end()
    }
  }
  if (redisUrl) {
    const { Redis } = await import("ioredis")
    const admin = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
    try {
      const keys = await admin.keys(`${redisPrefix}*`)
      if (keys.length > 0) await admin.del(...keys)
    } finally {
      admin.disconnect()
    }
  }
})

interface Backend {
  name: string
  skip?: string
  open(): DurableStore
  /** The store URL (`openStore`) another process opens the same store with; none for memory. */
  url?: () => string
}

const backends: Backend[] = [
  { name: "memory", open: () => createMemoryStore() },
  {
    name: "SQLite",
    open: () => new SqliteStore({ path: join(env.dir, `host-doors-${randomBytes(4).toString("hex")}.db`) }),
    url: () => `sqlite:${join(env.dir, `host-doors-kill-${randomBytes(4).toString("hex")}.db`)}`,
  },
  {
    name: "PostgreSQL",
    ...(pgUrl ? {} : { skip: "TOOLNEXUS_TEST_PG_URL is not set" }),
    open: () => new PostgresStore({ connectionString: pgUrl as string, schema: pgSchema }),
    url: () => `${pgUrl}${pgUrl?.includes("?") ? "&" : "?"}schema=${pgSchema}`,
  },
  {
    name: "Redis",
    ...(redisUrl ? {} : { skip: "TOOLNEXUS_TEST_REDIS_URL is not set" }),
    open: () => new RedisStore({ url: redisUrl as string, keyPrefix: redisPrefix }),
    url: () => `${redisUrl}${redisUrl?.includes("?") ? "&" : "?"}keyPrefix=${redisPrefix}`,
  },
]

/** A store host over a fresh store of `backend`, one client agent "support" with the refund tools. */
async function hosted(backend: Backend) {
  const store = backend.open()
  const client: Client = clientOf(env.fake, store)
  const { effects, tools } = refundTools()
  const toolkit = await createToolkit({ extraTools: tools })
  const host: RunHost = createStoreHost({
    store,
    agents: [hostAgent({ name: "support", client, toolkit })],
    sweepEveryMs: false,
  })
  cleanups.push(async () => {
    await host.close()
    await (store as { close?: () => Promise<void> }).close?.()
  })
  return { store, host, effects }
}

let counter = 0
const chatId = () => `host-doors-${++counter}-${suffix}`

describe.each(backends)("the doors over { host, agent } on createStoreHost ($name)", (backend) => {
  it.skipIf(backend.skip !== undefined)(
    "useChat (the AI SDK's Chat): approved once, the tool runs once; a second answer is 409 with the first decision",
    async () => {
      const { host, effects } = await hosted(backend)
      const server = await serve(createChatHandler({ host, agent: "support" }))
      const id = chatId()
      const { chat, errors } = chatAt(server.url, id, {
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      })
      await chat.sendMessage({ text: "refund my order" })
      await settled(chat)
      expect(errors).toEqual([])
      const requestId = approvalIdOf(chat.lastMessage)
      // The run parked on the host: its request is listed under the chat's run id.
      expect((await host.findRequest(requestId))?.conversationId).toBe(id)
      await chat.addToolApprovalResponse({ id: requestId, approved: true })
      await settled(chat)
      expect(errors).toEqual([])
      expect(textOf(chat.lastMessage)).toBe("Done: refunded 30 EUR on A1")
      expect(effects).toHaveLength(1)
      expect(await host.getDecision(requestId)).toEqual({ ok: true })

      // A second tab answers the decided request: the conflict contract, nothing runs again.
      const again = await postRaw(server.url, {
        id,
        messages: [],
        trigger: "submit-message",
        answer: { id: requestId, ok: false, reason: "changed my mind" },
      })
      expect(again.status).toBe(409)
      expect(((await again.json()) as { error: unknown }).error).toMatchObject({
        code: "TNX_ANSWER_CONFLICT",
        requestId,
        decision: { ok: true },
      })
      // Another chat naming it learns nothing.
      const foreign = await postRaw(server.url, {
        id: chatId(),
        messages: [],
        trigger: "submit-message",
        answer: { id: requestId, ok: true },
      })
      expect(foreign.status).toBe(404)
      expect(effects).toHaveLength(1)
      // The transcript is the host's: a later turn continues it.
      const transcript = await host.transcript(id)
      expect(JSON.stringify(transcript)).toContain("refunded 30 EUR on A1")
      await server.close()
    },
  )

  it.skipIf(backend.skip !== undefined)(
    "AG-UI (HttpAgent): a resumed interrupt runs the tool once; resuming it again is one RUN_ERROR TNX_ANSWER_CONFLICT",
    async () => {
      const { host, effects } = await hosted(backend)
      const server = await serve(createAgUiHandler({ host, agent: "support" }))
      const agent = new HttpAgent({ url: `${server.url}/agent`, threadId: chatId() })
      agent.addMessage({ id: "u1", role: "user", content: "refund please" })
      const events: { type: string; [key: string]: unknown }[] = []
      await agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) })
      const finished = events.find((e) => e.type === "RUN_FINISHED") as unknown as {
        outcome: { interrupts: { id: string; reason: string }[] }
      }
      const interrupt = finished.outcome.interrupts[0]
      expect(interrupt?.reason).toBe("tool_call")
      const resume = [{ interruptId: interrupt!.id, status: "resolved", payload: { approved: true } }]

      const resumed: { type: string; [key: string]: unknown }[] = []
      await agent.runAgent({ resume } as never, { onEvent: ({ event }) => void resumed.push(event) })
      expect(resumed.find((e) => e.type === "TOOL_CALL_RESULT")).toMatchObject({
        content: "refunded 30 EUR on A1",
      })
      expect(effects).toHaveLength(1)

      // The same resume posted again (a retried request): one RUN_ERROR with the conflict code.
      const replay = await fetch(`${server.url}/agent`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          threadId: agent.threadId,
          runId: "replayed",
          messages: [],
          tools: [],
          context: [],
          resume,
        }),
      })
      const frames = (await replay.text())
        .split("\n\n")
        .filter((f) => f.startsWith("data: "))
        .map((f) => JSON.parse(f.slice(6)) as { type: string; code?: string })
      expect(frames).toMatchObject([{ type: "RUN_ERROR", code: "TNX_ANSWER_CONFLICT" }])
      expect(effects).toHaveLength(1)
      await server.close()
    },
  )
})

describe("GET …/<id>/stream over a host", () => {
  it("replays a run the host has in flight that the handler did not start, from its first event; then 204", async () => {
    const { host } = await hosted(backends[0] as Backend)
    const server = await serve(createChatHandler({ host, agent: "support" }))
    const id = chatId()
    // Started by the app, not through the handler; the model answers "slow" after 300 ms.
    await host.start("support", id, "slow please")
    const replay = await fetch(`${server.url}/api/chat/${id}/stream`)
    expect(replay.status).toBe(200)
    const chunks = await chunksOf(replay)
    expect(chunks[0]).toMatchObject({ type: "start" })
    expect(
      chunks
        .filter((c) => c.type === "text-delta")
        .map((c) => (c as { delta: string }).delta)
        .join(""),
    ).toBe("Slowly.")
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
    await host.result(id)
    expect((await fetch(`${server.url}/api/chat/${id}/stream`)).status).toBe(204)
    await server.close()
  })
})

/** The chat handler over `{ host, agent }` in a process of its own on the store `url` names. */
async function otherProcess(url: string, log: string): Promise<{ url: string; child: ChildProcess }> {
  const script = fileURLToPath(new URL("./fixtures/host-chat-server.mjs", import.meta.url))
  const child = spawn(process.execPath, [script, url, `${env.fake.url}/v1`], {
    env: { ...process.env, TNX_LOG: log },
    stdio: ["ignore", "pipe", "inherit"],
  })
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  })
  const [line] = (await once(createInterface({ input: child.stdout! }), "line")) as [string]
  return { url: (JSON.parse(line) as { url: string }).url, child }
}

describe.each(backends.filter((b) => b.url !== undefined))(
  "a worker SIGKILLed between the request and the answer ($name)",
  (backend) => {
    it.skipIf(backend.skip !== undefined)(
      "another process's handler over the same store applies the approval once; a replay is 409",
      async () => {
        const storeUrl = (backend.url as () => string)()
        const log = join(env.dir, `effects-${randomBytes(4).toString("hex")}.log`)
        writeFileSync(log, "")
        const worker = await otherProcess(storeUrl, log)
        const id = chatId()
        const user = userMessage("refund please")
        const card = await chunksOf(
          await postRaw(worker.url, { id, messages: [user], trigger: "submit-message" }),
        )
        const assistant = await messageOf(card)
        worker.child.kill("SIGKILL")
        await once(worker.child, "exit")

        const store = await openStore(storeUrl)
        const client = clientOf(env.fake, store)
        const { effects, tools } = refundTools()
        const host = createStoreHost({
          store,
          agents: [
            hostAgent({ name: "support", client, toolkit: await createToolkit({ extraTools: tools }) }),
          ],
          sweepEveryMs: false,
        })
        cleanups.push(async () => {
          await host.close()
          await (store as { close?: () => Promise<void> }).close?.()
        })
        const server = await serve(createChatHandler({ host, agent: "support" }))
        const body = {
          id,
          messages: [user, responded(assistant, true)],
          trigger: "submit-message",
          messageId: assistant.id,
        }
        const applied = await chunksOf(await postRaw(server.url, body))
        expect(applied.at(-1)).toEqual({ type: "finish", finishReason: "stop" })
        expect(effects).toHaveLength(1)
        expect(readFileSync(log, "utf8")).toBe("")
        const replay = await postRaw(server.url, body)
        expect(replay.status).toBe(409)
        expect(((await replay.json()) as { error: unknown }).error).toMatchObject({
          code: "TNX_ANSWER_CONFLICT",
          decision: { ok: true },
        })
        expect(effects).toHaveLength(1)
        await server.close()
      },
    )
  },
)

describe("{ host, agent } options", () => {
  it("are refused with ConfigError when mixed with the shorthand, or when host or agent is missing", async () => {
    const store = createMemoryStore()
    const client = clientOf(env.fake, store)
    const host = createStoreHost({ store, agents: [hostAgent({ name: "a", client })], sweepEveryMs: false })
    for (const make of [createChatHandler, createAgUiHandler]) {
      expect(() => make({ host, agent: "a", client } as never)).toThrow(/not both/)
      expect(() => make({ host: {} as RunHost, agent: "a" })).toThrow(/`host` must be a RunHost/)
      expect(() => make({ host, agent: "" })).toThrow(/`agent` must name/)
      expect(() => make({ host, agent: "a" })).not.toThrow()
    }
    await host.close()
  })

  it("the shorthand refuses a client whose store cannot host (a plain ConversationStore, a used default store)", async () => {
    const plain = clientOf(env.fake, new MemoryStore())
    expect(() => createChatHandler({ client: plain })).toThrow(/cannot host the chats/)
    const used = clientOf(env.fake)
    await used.conversationStore().save("earlier", [])
    expect(() => createAgUiHandler({ client: used })).toThrow(/cannot host the chats/)
    // A fresh store-less client is moved onto a durable memory store, once, for every handler.
    const fresh = clientOf(env.fake)
    createChatHandler({ client: fresh })
    expect(typeof (fresh.conversationStore() as DurableStore).claimAnswer).toBe("function")
    expect(() => createAgUiHandler({ client: fresh })).not.toThrow()
  })
})
