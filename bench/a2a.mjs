// A2A (DESIGN §14), two figures, each server in its own process so the client's CPU is its own:
//
//   outbound  per-call cost of a2aTool against a direct @a2a-js/sdk client call to the same
//             SDK server (DefaultRequestHandler + a trivial executor that completes at once):
//             client CPU and wall time per call, c=1, streaming and non-streaming cards.
//   inbound   SendMessage throughput (SDK client, concurrency 16) of serveA2A (a scripted
//             in-process model that answers at once, SQLite in memory) against the SDK's own
//             server with a trivial executor.
//
//   node bench/a2a.mjs [--calls 400] [--messages 2000]
import { spawn } from "node:child_process"
import { createServer } from "node:http"
import { Readable } from "node:stream"
import { fileURLToPath } from "node:url"
import { AGENT_CARD_PATH, Role, TaskState } from "@a2a-js/sdk"
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { UserBuilder, agentCardHandler, jsonRpcHandler } from "@a2a-js/sdk/server/express"

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}

const text = (value) => ({
  content: { $case: "text", value },
  metadata: undefined,
  filename: "",
  mediaType: "",
})

/** The SDK's own server with a trivial executor: one artifact, completed. */
async function serveSdk(streaming) {
  const express = (await import("express")).default
  const app = express()
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s))
  })
  const url = `http://127.0.0.1:${server.address().port}`
  const card = {
    name: "echo",
    description: "echoes",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  }
  const executor = {
    async execute(rc, bus) {
      const { taskId, contextId } = rc
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_SUBMITTED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          artifacts: [],
          history: [rc.userMessage],
          metadata: undefined,
        }),
      )
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: "result",
            name: "result",
            description: "",
            parts: [text("ok")],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      )
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          metadata: undefined,
        }),
      )
    },
    async cancelTask() {},
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor)
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }))
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  return url
}

/** serveA2A with a scripted model that answers at once, on SQLite in memory. */
async function serveToolnexus() {
  const { createInProcessClient, createToolkit } = await import("@toolnexus/core")
  const { SqliteStore } = await import("@toolnexus/durable/sqlite")
  const { serveA2A } = await import("@toolnexus/a2a")
  const store = new SqliteStore({ path: ":memory:" })
  const client = createInProcessClient({ model: "echo", store, generate: async () => ({ content: "ok" }) })
  const handler = serveA2A({ card: { name: "echo" }, client, toolkit: await createToolkit(), store })
  const server = createServer((req, res) => {
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === "string") headers.set(name, value)
    const hasBody = req.method !== "GET" && req.method !== "HEAD"
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      ...(hasBody ? { body: Readable.toWeb(req), duplex: "half" } : {}),
    })
    void handler.fetch(request).then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers))
      if (response.body) for await (const chunk of response.body) res.write(chunk)
      res.end()
    })
  })
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  return `http://127.0.0.1:${server.address().port}`
}

function startServer(kind) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--serve", kind], {
    stdio: ["pipe", "pipe", "inherit"],
  })
  return new Promise((resolve) => {
    let out = ""
    child.stdout.on("data", (chunk) => {
      out += chunk
      const match = /READY (\S+)/.exec(out)
      if (match) resolve({ url: match[1], stop: () => child.kill() })
    })
  })
}

async function sdkClient(url) {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory()],
    cardResolver: new DefaultAgentCardResolver(),
  })
  return factory.createFromUrl(url)
}

const message = (n) => ({
  messageId: `m-${process.pid}-${n}-${Math.random()}`,
  contextId: "",
  taskId: "",
  role: Role.ROLE_USER,
  parts: [text("hi")],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
})
const params = (n) => ({
  tenant: "",
  message: message(n),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
  metadata: undefined,
})

async function measure(calls, fn) {
  for (let i = 0; i < Math.min(100, calls); i++) await fn(i)
  const cpu = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < calls; i++) await fn(i)
  const wall = performance.now() - started
  const used = process.cpuUsage(cpu)
  return { cpuUs: (used.user + used.system) / calls, wallUs: (wall * 1000) / calls }
}

async function outbound(calls) {
  const { a2aTool } = await import("@toolnexus/a2a")
  const rows = []
  for (const streaming of [false, true]) {
    const server = await startServer(streaming ? "sdk-streaming" : "sdk")
    const client = await sdkClient(server.url)
    const direct = streaming
      ? await measure(calls, async (i) => {
          for await (const _ of client.sendMessageStream(params(i))) {
          }
        })
      : await measure(calls, (i) => client.sendMessage(params(i)))
    const tool = await a2aTool({ url: server.url, pollIntervalMs: 1 })
    const viaTool = await measure(calls, async (i) => {
      const result = await tool.execute(
        { prompt: "hi" },
        { idempotencyKey: `bench:${process.pid}:${i}:${Math.random()}` },
      )
      if (result.isError) throw new Error(result.output)
    })
    server.stop()
    rows.push({ mode: streaming ? "streaming" : "send + poll", direct, viaTool })
  }
  console.log(`outbound, ${calls} calls each, c=1 (client CPU and wall per call, µs):`)
  for (const { mode, direct, viaTool } of rows) {
    console.log(
      `  ${mode.padEnd(12)} direct SDK client cpu ${direct.cpuUs.toFixed(0)} wall ${direct.wallUs.toFixed(0)} | a2aTool cpu ${viaTool.cpuUs.toFixed(0)} wall ${viaTool.wallUs.toFixed(0)} | cpu ×${(viaTool.cpuUs / direct.cpuUs).toFixed(2)}, wall ×${(viaTool.wallUs / direct.wallUs).toFixed(2)}`,
    )
  }
}

async function inbound(messages) {
  const concurrency = 16
  const rows = []
  for (const kind of ["sdk", "toolnexus"]) {
    const server = await startServer(kind)
    const client = await sdkClient(server.url)
    let next = 0
    const worker = async () => {
      while (next < messages) {
        const n = next++
        const result = await client.sendMessage(params(n))
        if (result.status?.state !== TaskState.TASK_STATE_COMPLETED)
          throw new Error(`task not completed: ${JSON.stringify(result.status)}`)
      }
    }
    next = messages - 200 // warm-up: 200 messages
    await Promise.all(Array.from({ length: concurrency }, worker))
    next = 0
    const started = performance.now()
    await Promise.all(Array.from({ length: concurrency }, worker))
    const seconds = (performance.now() - started) / 1000
    server.stop()
    rows.push({ kind, perSecond: messages / seconds })
  }
  const [sdk, ours] = rows
  console.log(`inbound SendMessage, ${messages} messages, concurrency ${concurrency}:`)
  console.log(`  SDK server + trivial executor: ${sdk.perSecond.toFixed(0)}/s`)
  console.log(
    `  serveA2A (SQLite :memory:):    ${ours.perSecond.toFixed(0)}/s  (×${(ours.perSecond / sdk.perSecond).toFixed(2)})`,
  )
}

const serveIndex = process.argv.indexOf("--serve")
if (serveIndex > 0) {
  const kind = process.argv[serveIndex + 1]
  const url = kind === "toolnexus" ? await serveToolnexus() : await serveSdk(kind === "sdk-streaming")
  process.stdout.write(`READY ${url}\n`)
  process.stdin.on("end", () => process.exit(0))
  process.stdin.resume()
} else {
  console.log(`node ${process.version}, ${new Date().toISOString()}`)
  await outbound(arg("calls", 400))
  await inbound(arg("messages", 2000))
}
