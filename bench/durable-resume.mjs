// Durable resume throughput on PostgreSQL and Redis, with the claim's heartbeat and the
// tool-result checkpoint on: --runs parked conversations (1,000 by default) resumed with 32
// in flight. Each resume claims the request, retries the halted `pay` call with the answer,
// checkpoints its result under the claim, asks the model once more and saves the final
// transcript, consuming the claim.
//
// - sdk: `askWithAnswer(client, {toolkit, id, answer})` on a `@toolnexus/durable` store
//   (`openStore`, a schema / key prefix of its own), default lease 30 s (renewed every 10 s).
// - floor: the same durable steps written by hand, one statement (or command) each: claim
//   (fenced by the pending request, no claim held), read the transcript, append the tool
//   result under the claim (the checkpoint), the LLM request, append the reply and clear
//   the pending request and the claim under the claim (the final save).
//
// Parking is not measured. The figure is resumes per second (wall time of the batch).
//
//   TOOLNEXUS_TEST_PG_URL=… TOOLNEXUS_TEST_REDIS_URL=… node durable-resume.mjs [--runs N] [--rounds R] [--only sdk|floor]
import { randomUUID } from "node:crypto"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { askWithAnswer, openStore } from "@toolnexus/durable"
import { Agent, request } from "undici"
import {
  API_KEY,
  MODEL,
  cliOptions,
  inFlight,
  machineLine,
  median,
  printRows,
  startMockServer,
} from "./harness.mjs"
import { FINAL, MOCK_ARGS, OPENAI_TOOLS, PAID, payTool, promptOf } from "./pay-scenario.mjs"

const options = cliOptions({ runs: 1_000, rounds: 3, warmup: 200 }, { variants: ["sdk", "floor"] })
const CONCURRENCY = 32
const server = await startMockServer(MOCK_ARGS)
const toolkit = await createToolkit({ extraTools: [payTool({ defineTool, pending })] })
const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 128 })

async function chat(messages) {
  const { body } = await request(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    dispatcher: agent,
    headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({ model: MODEL, messages, tools: OPENAI_TOOLS }),
  })
  return (await body.json()).choices[0].message
}

/** Parks conversation `id` by hand: user, assistant tool call, placeholder; returns it. */
async function parkedTranscript(i) {
  const user = { role: "user", content: promptOf(i) }
  const call = await chat([user])
  const requestId = `pnd-${randomUUID()}`
  const callId = call.tool_calls[0].id
  const pendingRequest = { id: requestId, kind: "approval", prompt: "Pay 42?", data: { callId } }
  return {
    messages: [user, call, { role: "tool", tool_call_id: callId, content: "Pay 42?" }],
    pending: pendingRequest,
  }
}

/** The floor's durable statements, per backend. */
const floors = {
  async postgres(url) {
    const pg = (await import("pg")).default
    // The same pool size as the store's own pool (pg's default, 10 connections).
    const pool = new pg.Pool({ connectionString: url })
    const s = `bench_floor_${randomUUID().replaceAll("-", "").slice(0, 12)}`
    await pool.query(`CREATE SCHEMA ${s};
      CREATE TABLE ${s}.conv (id text PRIMARY KEY, pending_id text, claim_token text, claim_expires timestamptz, n int NOT NULL);
      CREATE TABLE ${s}.msgs (conversation_id text, seq int, body text, PRIMARY KEY (conversation_id, seq))`)
    return {
      async park(id, { messages, pending: p }) {
        await pool.query(`INSERT INTO ${s}.conv VALUES ($1, $2, NULL, NULL, $3)`, [id, p.id, messages.length])
        await pool.query(
          `INSERT INTO ${s}.msgs SELECT $1, t.seq, t.body FROM unnest($2::int[], $3::text[]) t(seq, body)`,
          [id, messages.map((_, k) => k), messages.map((m) => JSON.stringify(m))],
        )
      },
      claim: async (id, requestId, token) =>
        (
          await pool.query(
            `UPDATE ${s}.conv SET claim_token = $3, claim_expires = now() + interval '30 seconds'
             WHERE id = $1 AND pending_id = $2 AND (claim_token IS NULL OR claim_expires < now())`,
            [id, requestId, token],
          )
        ).rowCount === 1,
      read: async (id) =>
        (
          await pool.query(`SELECT body FROM ${s}.msgs WHERE conversation_id = $1 ORDER BY seq`, [id])
        ).rows.map((r) => JSON.parse(r.body)),
      // Replaces the placeholder (the last message) and appends, only while the claim holds.
      async append(id, token, from, bodies, done) {
        const { rowCount } = await pool.query(
          `WITH c AS (UPDATE ${s}.conv SET n = $3 + cardinality($4::text[]),
              pending_id = CASE WHEN $5 THEN NULL ELSE pending_id END,
              claim_token = CASE WHEN $5 THEN NULL ELSE claim_token END
            WHERE id = $1 AND claim_token = $2 RETURNING id),
          d AS (DELETE FROM ${s}.msgs WHERE conversation_id = $1 AND seq >= $3 AND EXISTS (SELECT 1 FROM c))
          INSERT INTO ${s}.msgs SELECT $1, $3 + t.k - 1, t.body FROM unnest($4::text[]) WITH ORDINALITY t(body, k)
          WHERE EXISTS (SELECT 1 FROM c) ON CONFLICT (conversation_id, seq) DO UPDATE SET body = excluded.body`,
          [id, token, from, bodies, done],
        )
        if (rowCount !== bodies.length) throw new Error("floor: the claim was lost")
      },
      async close() {
        await pool.query(`DROP SCHEMA ${s} CASCADE`)
        await pool.end()
      },
    }
  },
  async redis(url) {
    const { Redis } = await import("ioredis")
    const redis = new Redis(url)
    const p = `bench-floor-${randomUUID()}:`
    return {
      async park(id, { messages, pending: req }) {
        await redis.hset(`${p}conv:${id}`, "pendingId", req.id)
        await redis.rpush(`${p}msgs:${id}`, ...messages.map((m) => JSON.stringify(m)))
      },
      claim: async (id, _requestId, token) =>
        (await redis.set(`${p}claim:${id}`, token, "PX", 30_000, "NX")) === "OK",
      read: async (id) => (await redis.lrange(`${p}msgs:${id}`, 0, -1)).map((b) => JSON.parse(b)),
      // Fenced by the claim in one script: trim to `from`, append, and on the last save release.
      async append(id, token, from, bodies, done) {
        const ok = await redis.eval(
          `if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
           redis.call("LTRIM", KEYS[2], 0, tonumber(ARGV[2]) - 1)
           for i = 4, #ARGV do redis.call("RPUSH", KEYS[2], ARGV[i]) end
           if ARGV[3] == "1" then redis.call("DEL", KEYS[1]); redis.call("HDEL", KEYS[3], "pendingId") end
           return 1`,
          3,
          `${p}claim:${id}`,
          `${p}msgs:${id}`,
          `${p}conv:${id}`,
          token,
          from,
          done ? "1" : "0",
          ...bodies,
        )
        if (ok !== 1) throw new Error("floor: the claim was lost")
      },
      async close() {
        const keys = await redis.keys(`${p}*`)
        if (keys.length) await redis.del(...keys)
        redis.disconnect()
      },
    }
  },
}

async function variantsFor(backend, url) {
  return {
    async sdk(count) {
      const sep = url.includes("?") ? "&" : "?"
      const ns = randomUUID().replaceAll("-", "").slice(0, 12)
      const store = await openStore(
        backend === "postgres" ? `${url}${sep}schema=bench_${ns}` : `${url}${sep}keyPrefix=bench-${ns}:`,
      )
      const client = createClient({
        baseUrl: server.baseUrl,
        style: "openai",
        model: MODEL,
        apiKey: API_KEY,
        store,
      })
      const ids = new Array(count)
      await inFlight(count, CONCURRENCY, async (i) => {
        const result = await client.ask(promptOf(i), { toolkit, id: `conv-${ns}-${i}` })
        ids[i] = result.pending.id
      })
      return {
        resume: async (i) => {
          const result = await askWithAnswer(client, {
            toolkit,
            id: `conv-${ns}-${i}`,
            answer: { id: ids[i], ok: true },
          })
          if (result.status !== "done" || result.text !== FINAL)
            throw new Error(`sdk: ${JSON.stringify(result.text)}`)
        },
        close: () => store.close(),
      }
    },
    async floor(count) {
      const floor = await floors[backend](url)
      const parked = new Array(count)
      await inFlight(count, CONCURRENCY, async (i) => {
        parked[i] = await parkedTranscript(i)
        await floor.park(`conv-${i}`, parked[i])
      })
      return {
        resume: async (i) => {
          const id = `conv-${i}`
          const token = randomUUID()
          if (!(await floor.claim(id, parked[i].pending.id, token))) throw new Error("floor: not claimed")
          const messages = await floor.read(id)
          const callId = messages[1].tool_calls[0].id
          const result = { role: "tool", tool_call_id: callId, content: PAID }
          await floor.append(id, token, messages.length - 1, [JSON.stringify(result)], false) // checkpoint
          const next = [...messages.slice(0, -1), result]
          const reply = await chat(next)
          if (reply.content !== FINAL) throw new Error("floor: unexpected reply")
          await floor.append(id, token, next.length, [JSON.stringify(reply)], true) // final save
        },
        close: () => floor.close(),
      }
    },
  }
}

console.log("Durable resume throughput, heartbeat and checkpoint on, c = 32")
console.log(machineLine())
const rows = []
for (const [backend, url] of [
  ["postgres", process.env.TOOLNEXUS_TEST_PG_URL],
  ["redis", process.env.TOOLNEXUS_TEST_REDIS_URL],
]) {
  if (!url) {
    console.log(
      `skipping ${backend}: set ${backend === "postgres" ? "TOOLNEXUS_TEST_PG_URL" : "TOOLNEXUS_TEST_REDIS_URL"}`,
    )
    continue
  }
  const variants = await variantsFor(backend, url)
  const names = Object.keys(variants).filter((n) => options.only === undefined || n === options.only)
  const rates = Object.fromEntries(names.map((n) => [n, []]))
  for (const name of names) {
    const warm = await variants[name](options.warmup)
    await inFlight(options.warmup, CONCURRENCY, warm.resume)
    await warm.close()
  }
  for (let round = 0; round < options.rounds; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const v = await variants[name](options.runs)
      const { wallNs } = await inFlight(options.runs, CONCURRENCY, v.resume)
      rates[name].push(options.runs / (wallNs / 1e9))
      await v.close()
    }
  }
  const sdk = median(rates.sdk ?? [0])
  const floor = median(rates.floor ?? [0])
  rows.push([backend, sdk.toFixed(0), floor.toFixed(0), floor ? `${(sdk / floor).toFixed(2)}×` : "-"])
}
printRows(["backend", "sdk resumes/s", "floor resumes/s", "sdk / floor"], rows)
console.log("target: sdk / floor ≥ 0.5 (DESIGN §7)")
await agent.close()
server.close()
