// DESIGN §15's engine figures, side by side in one run: answer → next LLM request (ms, the
// median of RUNS approvals) and steps per second (a TURNS-turn run with one tool call per turn,
// so 2·TURNS−1 steps) for Restate, DBOS and @toolnexus/durable on PostgreSQL.
//
//   TOOLNEXUS_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/test node engines.mjs [--runs 10] [--turns 100]
//
// The Restate server comes from @restatedev/restate-server (loopback ports, telemetry off, a
// temp base dir); DBOS and durable each get a database of their own, dropped at the end. The
// workers run in this process; the scripted model is core's fake server, also in process.
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { createFakeLLMServer } from "@toolnexus/core/testing"
import { connectDbos, dbosAgent, launchDbos } from "@toolnexus/dbos"
import { deliverAnswer } from "@toolnexus/durable"
import { PostgresStore } from "@toolnexus/durable/postgres"
import { connectRestate, restateAgent, serveRestate } from "@toolnexus/restate"
import pg from "pg"

const { values } = parseArgs({ options: { runs: { type: "string" }, turns: { type: "string" } } })
const RUNS = Number(values.runs ?? 10)
const TURNS = Number(values.turns ?? 100)
const PG_URL = process.env.TOOLNEXUS_TEST_PG_URL
if (!PG_URL) {
  console.error("set TOOLNEXUS_TEST_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test)")
  process.exit(2)
}

// The model: "approve <id>" asks `pay` once, then answers; "count <id>" calls `tick` TURNS−1 times.
const llm = await createFakeLLMServer()
const answeredAt = new Map() // prompt → when the request after the answer arrived
const assistants = (req) => req.body.messages.filter((m) => m.role === "assistant").length
llm.addRule({
  match: () => true,
  reply: (req) => {
    const prompt = req.lastUserText
    const n = assistants(req)
    if (prompt.startsWith("approve")) {
      if (n === 0) return { toolCalls: [{ id: "p1", name: "pay", arguments: { amount: 5 } }] }
      answeredAt.set(prompt, performance.now())
      return { text: "paid" }
    }
    return n < TURNS - 1
      ? { toolCalls: [{ id: `t${n}`, name: "tick", arguments: { n } }] }
      : { text: "counted" }
  },
})
const pay = defineTool({
  name: "pay",
  description: "pays, with approval",
  inputSchema: { type: "object", properties: { amount: { type: "number" } } },
  run: ({ amount }, ctx) =>
    ctx.answer?.ok ? `paid ${amount}` : pending({ kind: "approval", prompt: `pay ${amount}?` }),
})
const tick = defineTool({
  name: "tick",
  description: "counts",
  inputSchema: { type: "object", properties: { n: { type: "number" } } },
  run: ({ n }) => `tick ${n}`,
})
const toolkit = await createToolkit({ extraTools: [pay, tick] })
const newClient = (store) =>
  createClient({
    baseUrl: `${llm.url}/v1`,
    style: "openai",
    model: "m",
    apiKey: "k",
    maxTurns: TURNS + 5,
    ...(store ? { store } : {}),
  })

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function freePort() {
  for (;;) {
    const port = await new Promise((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address()
        server.close(() => resolve(port))
      })
    })
    if (port > 20000) return port
  }
}

async function createDatabase() {
  const name = `tnx_bench_${randomBytes(5).toString("hex")}`
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(PG_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: PG_URL })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    },
  }
}

async function startRestate() {
  const require = createRequire(import.meta.url)
  const launcher = createRequire(require.resolve("@restatedev/restate-server/package.json"))
  const binary = launcher.resolve(
    `@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`,
  )
  const dir = mkdtempSync(join(tmpdir(), "tnx-bench-restate-"))
  const [ingressPort, adminPort, fabricPort] = [await freePort(), await freePort(), await freePort()]
  const child = spawn(
    binary,
    ["--no-logo", "--listen-mode", "tcp", "--base-dir", dir, "--default-num-partitions", "1"],
    {
      env: {
        ...process.env,
        RESTATE_DISABLE_TELEMETRY: "true",
        RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`,
        RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
        RESTATE_BIND_ADDRESS: `127.0.0.1:${fabricPort}`,
        RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${fabricPort}`,
        RESTATE_LOG_FILTER: "warn",
      },
      stdio: "ignore",
    },
  )
  const ingress = `http://127.0.0.1:${ingressPort}`
  const admin = `http://127.0.0.1:${adminPort}`
  for (let i = 0; ; i++) {
    const ok = await fetch(`${admin}/health`).then(
      (r) => r.ok,
      () => false,
    )
    if (
      ok &&
      (await fetch(`${ingress}/restate/health`).then(
        (r) => r.ok,
        () => false,
      ))
    )
      break
    if (i > 400) throw new Error("the Restate server did not start")
    await sleep(50)
  }
  return {
    ingress,
    admin,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => {
          rmSync(dir, { recursive: true, force: true })
          resolve()
        })
        child.kill("SIGTERM")
      }),
  }
}

/** On an engine connection: median answer → next request over RUNS runs, then one long run's steps/s. */
async function measureEngine(engine, agent, tag) {
  const latencies = []
  for (let i = 0; i < RUNS; i++) {
    const runId = `${tag}-approve-${i}`
    const prompt = `approve ${runId}`
    await engine.start(agent, runId, prompt)
    let open
    for (;;) {
      open = (await engine.listPending()).find((e) => e.conversationId === runId)
      if (open) break
      await sleep(5)
    }
    const sent = performance.now()
    await engine.deliverAnswer({ id: open.request.id, ok: true })
    await engine.result(runId, { timeoutMs: 60_000 })
    latencies.push(answeredAt.get(prompt) - sent)
  }
  const runId = `${tag}-count`
  const started = performance.now()
  await engine.start(agent, runId, `count ${runId}`)
  const result = await engine.result(runId, { timeoutMs: 600_000 })
  const seconds = (performance.now() - started) / 1000
  const steps = result.turns + result.toolCallCount
  return { answerToNextMs: median(latencies), stepsPerSecond: steps / seconds, steps }
}

const rows = []

// Restate
{
  const server = await startRestate()
  const worker = await serveRestate({
    agents: [restateAgent({ name: "bench", client: newClient(), toolkit })],
    port: await freePort(),
    admin: server.admin,
  })
  const engine = connectRestate({ ingress: server.ingress, admin: server.admin })
  await sleep(500) // the registration reaches the ingress
  rows.push({
    engine: "Restate 1.7 (@toolnexus/restate)",
    ...(await measureEngine(engine, "bench", "restate")),
  })
  await worker.close()
  await server.stop()
}

// DBOS
{
  const db = await createDatabase()
  const dbos = await launchDbos({
    agents: [dbosAgent({ name: "bench", client: newClient(), toolkit })],
    systemDatabaseUrl: db.url,
  })
  const engine = connectDbos({ systemDatabaseUrl: db.url })
  rows.push({ engine: "DBOS 5.3 (@toolnexus/dbos)", ...(await measureEngine(engine, "bench", "dbos")) })
  await engine.close()
  await dbos.close()
  await db.drop()
}

// @toolnexus/durable on PostgreSQL: park, deliverAnswer; a checkpointed ask of the same shape.
{
  const db = await createDatabase()
  const store = new PostgresStore({ connectionString: db.url })
  const client = newClient(store)
  const latencies = []
  for (let i = 0; i < RUNS; i++) {
    const id = `durable-approve-${i}`
    const prompt = `approve ${id}`
    const parked = await client.ask(prompt, { id, toolkit })
    const sent = performance.now()
    await deliverAnswer(store, { id: parked.pending.id, ok: true }, { client, toolkit })
    latencies.push(answeredAt.get(prompt) - sent)
  }
  const started = performance.now()
  const result = await client.ask("count durable", { id: "durable-count", toolkit, checkpoint: true })
  const seconds = (performance.now() - started) / 1000
  const steps = result.turns + result.toolCallCount
  rows.push({
    engine: "@toolnexus/durable, PostgreSQL",
    answerToNextMs: median(latencies),
    stepsPerSecond: steps / seconds,
    steps,
  })
  await store.close()
  await db.drop()
}

await llm.close()
console.log(`node ${process.version}, ${RUNS} approvals each, a ${TURNS}-turn run (${2 * TURNS - 1} steps)`)
console.log("| engine | answer → next LLM request (median ms) | steps/s |")
console.log("| --- | ---: | ---: |")
for (const r of rows)
  console.log(`| ${r.engine} | ${r.answerToNextMs.toFixed(1)} | ${r.stepsPerSecond.toFixed(0)} |`)
process.exit(0)
