import { readWriteStats } from "../src/store-engine/write-stats.js"
import { randomUUID } from "node:crypto"
import { AnswerExpiredError, type Request } from "@toolnexus/core"
import { Redis } from "ioredis"
import { afterAll, describe, expect, it } from "vitest"
import { RedisStore } from "../src/redis/index.js"
import { REDIS_MIGRATIONS } from "../src/redis/migrations.js"
import { describeStoreContract } from "../src/testing/store-contract.js"
import { parkAndResume, request, turns, uid } from "../src/testing/contract/context.js"
import { deliverToParkedTree } from "./two-level-tree.js"

const url = process.env.TOOLNEXUS_TEST_REDIS_URL
const skip = url ? undefined : "TOOLNEXUS_TEST_REDIS_URL is not set"
// A prefix of our own per run: parallel runs never meet, and deleting it cleans up.
const keyPrefix = `tnx-test-${randomUUID()}:`
let adminClient: Redis | undefined
const admin = () => {
  adminClient ??= new Redis(url as string, { lazyConnect: true, maxRetriesPerRequest: 1 })
  return adminClient
}

afterAll(async () => {
  if (url === undefined) return
  try {
    // Both our prefix and the host-prefixed variant used below.
    for (const pattern of [`${keyPrefix}*`, `host-${keyPrefix}*`]) {
      const keys = await admin().keys(pattern)
      if (keys.length > 0) await admin().del(...keys)
    }
  } finally {
    admin().disconnect()
  }
})

describeStoreContract("RedisStore", {
  writeStats: readWriteStats,
  skip,
  create: async (extra) => new RedisStore({ url, keyPrefix, opTimeoutMs: 1000, ...extra }),
  corruptPending: async (_store, id) => {
    await admin().hset(`${keyPrefix}conv:${id}`, "pending", "{not json")
  },
  viaProxy: {
    target: { host: "127.0.0.1", port: Number(new URL(url ?? "redis://x:6379").port || 6379) },
    create: (port, opTimeoutMs) => {
      const proxied = new URL(url as string)
      proxied.port = String(port)
      return new RedisStore({ url: proxied.toString(), keyPrefix, opTimeoutMs })
    },
  },
  corrupt: async (_store, id, index) => {
    await admin().lset(`${keyPrefix}msgs:${id}`, index, "not json {")
  },
  setSchemaVersion: async (_store, version) => {
    await admin().set(`${keyPrefix}schema`, String(version))
  },
  schemaVersion: REDIS_MIGRATIONS.length,
  unreachable: async () => new RedisStore({ url: "redis://127.0.0.1:1", keyPrefix }),
})

describe.skipIf(skip !== undefined)("RedisStore on a live server", () => {
  it("works through a host client with its own key prefix, and leaves it connected", async () => {
    const client = new Redis(url as string, { keyPrefix: "host-" })
    try {
      const store = new RedisStore({ client, keyPrefix, opTimeoutMs: 150 })
      const id = uid("host-client")
      const kind = uid("kind")
      const req = request(kind)
      await store.save(id, turns(2), { pending: req })
      expect(await store.get(id)).toEqual(turns(2))
      expect(await store.listPending({ kind })).toEqual([
        { conversationId: id, request: req, since: expect.any(String), attempts: 0, state: "open" },
      ])
      const claim = await store.claimAnswer(id, { id: req.id, ok: true }, { leaseMs: 300 })
      await new Promise((resolve) => setTimeout(resolve, 360))
      expect((await store.listExpiredClaims()).map((entry) => entry.id)).toContain(id)
      await store.save(id, turns(3), { pending: null, claim: claim.token })
      await store.close()
      expect(client.status).toBe("ready")
      expect(await admin().exists(`host-${keyPrefix}conv:${id}`)).toBe(1)
    } finally {
      client.disconnect()
    }
  })

  /** A client that records the name of every command it sends: one per round trip. */
  function countingClient(): { client: Redis; calls: string[] } {
    const client = new Redis(url as string)
    const calls: string[] = []
    const send = client.sendCommand.bind(client)
    client.sendCommand = (command, stream) => {
      calls.push(command.name)
      return send(command, stream)
    }
    return { client, calls }
  }

  it("resumes in three round trips: claim (with the transcript), checkpoint, final save (regression: it took 6, then 4)", async () => {
    const { client, calls } = countingClient()
    try {
      const store = new RedisStore({ client, keyPrefix })
      const reader = new RedisStore({ client, keyPrefix })
      const resume = (id: string) => parkAndResume(store, reader, id, calls)
      await resume(uid("round-trips-warm")) // loads the scripts on the server
      expect(await resume(uid("round-trips"))).toEqual(["evalsha", "evalsha", "evalsha"])
    } finally {
      client.disconnect()
    }
  })

  it("resumes a saved two-level tree in 7 round trips, the claim reading the leaf (regression: it took 8)", async () => {
    const { client, calls } = countingClient()
    try {
      const store = new RedisStore({ client, keyPrefix })
      let sent: string[] = []
      const count = (delivering: boolean) => {
        if (delivering) calls.length = 0
        else sent = [...calls]
      }
      await deliverToParkedTree(store, count) // loads the scripts on the server
      await deliverToParkedTree(store, count)
      expect(sent).toEqual([
        "evalsha", // findRequest
        "get", // getSnapshot
        "evalsha", // the claim, with the leaf's transcript the cascade loads first
        "evalsha", // the leaf's checkpoint: the first LLM request follows
        "evalsha", // the lead, loaded once the leaf has answered
        "evalsha", // its checkpoint, fenced by the claim
        "evalsha", // commitResume
      ])
    } finally {
      client.disconnect()
    }
  })

  it("judges an approval's expiresAt from the first call's reply, claiming again only when in time", async () => {
    const { client, calls } = countingClient()
    try {
      const store = new RedisStore({ client, keyPrefix })
      const claimCalls = async (req: Request, ok: boolean) => {
        const id = uid("deadline")
        await store.save(id, turns(1), { pending: req })
        calls.length = 0
        const outcome = await store
          .claimAnswer(id, ok ? { id: req.id, ok } : { id: req.id, ok, reason: "no" })
          .then(
            () => "granted",
            (error: Error) => error,
          )
        return { outcome, calls: calls.length }
      }
      const soon = new Date(Date.now() + 60_000).toISOString()
      const past = new Date(Date.now() - 1000).toISOString()
      expect(await claimCalls(request("approval"), true)).toEqual({ outcome: "granted", calls: 1 })
      expect(await claimCalls({ ...request("approval"), expiresAt: soon }, true)).toEqual({
        outcome: "granted",
        calls: 2,
      })
      // A mention of expiresAt that is not the field costs the second call, and grants.
      const mention = { ...request("approval"), prompt: 'no "expiresAt" here' }
      expect(await claimCalls(mention, true)).toEqual({ outcome: "granted", calls: 2 })
      // Too late: refused from the first reply (which wrote nothing), no second call.
      const late = await claimCalls({ ...request("approval"), expiresAt: past }, true)
      expect(late.calls).toBe(1)
      expect(late.outcome).toBeInstanceOf(AnswerExpiredError)
      expect((late.outcome as AnswerExpiredError).expiresAt).toBe(past)
      // A refusal is never late.
      expect(await claimCalls({ ...request("approval"), expiresAt: past }, false)).toEqual({
        outcome: "granted",
        calls: 1,
      })
    } finally {
      client.disconnect()
    }
  })

  it("racing claims the script leaves to judgeClaim (a deadline to judge, a takeover) grant once: the write is a compare-and-set", async () => {
    const stores = Array.from({ length: 6 }, () => new RedisStore({ url, keyPrefix, opTimeoutMs: 1000 }))
    const granted = <T>(results: PromiseSettledResult<T>[]) =>
      results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))
    try {
      const id = uid("cas-race")
      const req = { ...request("approval"), expiresAt: new Date(Date.now() + 60_000).toISOString() }
      await (stores[0] as RedisStore).save(id, turns(1), { pending: req })
      const firsts = granted(
        await Promise.allSettled(
          stores.map((s, i) => s.claimAnswer(id, { id: req.id, ok: true, data: { i } })),
        ),
      )
      expect(firsts).toHaveLength(1)
      const first = firsts[0] as Awaited<ReturnType<RedisStore["claimAnswer"]>>
      await (stores[0] as RedisStore).releaseClaim(id, first.token)
      const takeovers = granted(
        await Promise.allSettled(stores.map((s) => s.claimAnswer(id, { id: req.id, ok: true }))),
      )
      expect(takeovers).toHaveLength(1)
      expect(takeovers[0]).toMatchObject({ takeover: true, answer: first.answer })
      expect(await (stores[0] as RedisStore).findRequest(req.id)).toMatchObject({
        state: "claimed",
        attempts: 2,
      })
    } finally {
      await Promise.all(stores.map((s) => s.close()))
    }
  })

  it("upgrades a key layout left at an older version", async () => {
    const prefix = `${keyPrefix}up:`
    const v1 = new RedisStore({ url, keyPrefix: prefix })
    const id = uid("old")
    await v1.save(id, turns(2))
    await v1.close()
    const v2 = new RedisStore({
      url,
      keyPrefix: prefix,
      migrations: [...REDIS_MIGRATIONS, `redis.call("SET", ARGV[2] .. "marker", "v2")`],
    })
    expect(await v2.get(id)).toEqual(turns(2))
    await v2.close()
    expect(await admin().get(`${prefix}schema`)).toBe(String(REDIS_MIGRATIONS.length + 1))
    expect(await admin().get(`${prefix}marker`)).toBe("v2")
    const old = new RedisStore({ url, keyPrefix: prefix })
    await expect(old.get(id)).rejects.toThrow(/schema version/)
    await old.close()
  })

  it("migration 2 moves version-1 claims and applied requests into the request index", async () => {
    const prefix = `${keyPrefix}v1:`
    const past = String(Date.now() - 60_000)
    const answer = JSON.stringify({ id: "r-claimed", ok: true, data: { by: "v1" } })
    const pending = JSON.stringify({ id: "r-claimed", kind: "approval", prompt: "ok?" })
    // The version-1 layout, written by hand: the claim lived on the conversation.
    await admin().set(`${prefix}schema`, "1")
    await admin().hset(`${prefix}conv:claimed`, {
      rev: "1",
      count: "0",
      pending,
      pendingId: "r-claimed",
      pendingKind: "approval",
      since: past,
      claimToken: "tok",
      claimRequest: "r-claimed",
      claimAnswer: answer,
      claimExpires: past,
    })
    await admin().zadd(`${prefix}pending`, past, "claimed")
    await admin().zadd(`${prefix}claims`, past, "claimed")
    await admin().hset(`${prefix}conv:done`, { rev: "2", count: "0", consumed: "r-done" })
    const store = new RedisStore({ url, keyPrefix: prefix })
    try {
      expect(await store.listExpiredClaims()).toEqual([
        { id: "claimed", request: JSON.parse(pending), answer: JSON.parse(answer) },
      ])
      expect(await store.findRequest("r-claimed")).toMatchObject({ state: "claimed", attempts: 1 })
      await expect(store.claimAnswer("done", { id: "r-done", ok: true })).rejects.toThrow(/already applied/)
      const taken = await store.claimAnswer("claimed", { id: "r-claimed", ok: false })
      expect(taken).toMatchObject({ takeover: true, answer: JSON.parse(answer) })
      await store.save("claimed", turns(1), { pending: null, claim: taken.token })
      expect(await store.getDecision("r-claimed")).toEqual({ ok: true })
    } finally {
      await store.close()
    }
  })
})
