import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { a2aTool } from "../src/a2a-tool.js"
import { A2AConnectError } from "../src/errors.js"
import { type RemoteAgent, TaskState, startRemoteAgent } from "./remote-agent.js"

// Issue 33: credentials stay with their origin, remote error bodies are redacted, and reading a
// card is bounded. Servers on 127.0.0.1 with different ports are different origins.

const KEY = "key-0b7c31d9e5"
const TOKEN = "tok-5e1a90c2f7"
const credentials = { headers: { "x-api-key": KEY }, bearerToken: TOKEN }

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close()
})

async function remote(): Promise<RemoteAgent> {
  const r = await startRemoteAgent()
  cleanups.push(() => r.close())
  r.setScript((e) => e.status(TaskState.TASK_STATE_COMPLETED, `echo ${e.text}`))
  return r
}

interface Seen {
  method: string
  path: string
  headers: IncomingMessage["headers"]
}

/** A server on its own port (its own origin) that records every request it gets. */
async function recorder(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server: Server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers })
    req.resume()
    req.on("end", () => handle(req, res))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

const CARD_PATH = "/.well-known/agent-card.json"
const carries = (headers: IncomingMessage["headers"] | Record<string, string> | undefined) =>
  headers?.["x-api-key"] === KEY || headers?.authorization === `Bearer ${TOKEN}`

describe("a2aTool: credentials stay with their origin (issue 33)", () => {
  it("a cross-origin 302 on the card URL is followed without the key and token", async () => {
    const r = await remote()
    const other = await recorder((_req, res) => res.writeHead(200).end(JSON.stringify(r.card)))
    const front = await recorder((_req, res) =>
      res.writeHead(302, { location: `${other.url}${CARD_PATH}` }).end(),
    )
    const tool = await a2aTool({ url: front.url, ...credentials })
    expect(tool.name).toBe("Travel_Desk")
    expect(front.seen[0]?.headers).toMatchObject({ "x-api-key": KEY, authorization: `Bearer ${TOKEN}` })
    expect(other.seen).toHaveLength(1)
    expect(carries(other.seen[0]?.headers)).toBe(false)
  })

  it("a cross-origin 307 on the JSON-RPC endpoint is followed without the key and token", async () => {
    const r = await remote()
    const front = await recorder((_req, res) => res.writeHead(307, { location: r.url }).end())
    const iface = { ...r.card.supportedInterfaces[0], url: `${front.url}/rpc` }
    const card = { ...r.card, supportedInterfaces: [iface] } as typeof r.card
    const tool = await a2aTool({ card, pollIntervalMs: 5, ...credentials })
    const result = await tool.execute({ prompt: "hi" }, {})
    expect(result).toMatchObject({ output: "echo hi", isError: false })
    expect(front.seen[0]).toMatchObject({ method: "POST", headers: { "x-api-key": KEY } })
    expect(r.headers.length).toBeGreaterThan(0)
    expect(r.headers.some(carries)).toBe(false)
  })

  it("a card naming a JSON-RPC endpoint on another origin gets no key or token there", async () => {
    const r = await remote()
    const cardHost = await recorder((_req, res) => res.writeHead(200).end(JSON.stringify(r.card)))
    const tool = await a2aTool({ url: cardHost.url, pollIntervalMs: 5, ...credentials })
    expect(await tool.execute({ prompt: "hi" }, {})).toMatchObject({ output: "echo hi", isError: false })
    expect(carries(cardHost.seen[0]?.headers)).toBe(true)
    expect(r.headers.length).toBeGreaterThan(0)
    expect(r.headers.some(carries)).toBe(false)
  })

  it("the same origin still gets them, along a same-origin redirect too; allowOrigins admits another", async () => {
    const r = await remote()
    const tool = await a2aTool({ url: r.url, pollIntervalMs: 5, ...credentials })
    await tool.execute({ prompt: "hi" }, {})
    expect(r.headers.every((h) => h["x-api-key"] === KEY && h.authorization === `Bearer ${TOKEN}`)).toBe(true)

    const moved = await recorder((req, res) => {
      if (req.url === CARD_PATH) res.writeHead(302, { location: "/card-v2.json" }).end()
      else res.writeHead(200).end(JSON.stringify(r.card))
    })
    const seenBefore = r.headers.length
    const allowed = await a2aTool({
      url: moved.url,
      pollIntervalMs: 5,
      allowOrigins: [r.url],
      ...credentials,
    })
    await allowed.execute({ prompt: "hi" }, {})
    expect(moved.seen.map((s) => s.path)).toEqual([CARD_PATH, "/card-v2.json"])
    expect(moved.seen.every((s) => carries(s.headers))).toBe(true)
    expect(r.headers.slice(seenBefore).every((h) => h["x-api-key"] === KEY)).toBe(true)
  })
})

describe("a2aTool: echoed secrets are redacted (issue 33)", () => {
  it("a key and token echoed in a remote's task status or HTTP error body never reach the result", async () => {
    const r = await remote()
    r.setScript((e) => e.status(TaskState.TASK_STATE_FAILED, `rejected key ${KEY} for Bearer ${TOKEN}`))
    const tool = await a2aTool({ url: r.url, pollIntervalMs: 5, ...credentials })
    const failed = await tool.execute({ prompt: "x" }, {})
    expect(failed.isError).toBe(true)
    expect(failed.output).toMatch(/rejected key \[redacted\] for \[redacted\]$/)

    // A gateway that answers the JSON-RPC POST with an error body dumping the request headers.
    const gateway = await recorder((req, res) => res.writeHead(500).end(JSON.stringify(req.headers)))
    const iface = { ...r.card.supportedInterfaces[0], url: gateway.url }
    const card = { ...r.card, supportedInterfaces: [iface] } as typeof r.card
    const echoed = await (await a2aTool({ card, pollIntervalMs: 5, ...credentials })).execute(
      { prompt: "x" },
      {},
    )
    expect(echoed.isError).toBe(true)
    expect(echoed.output).toContain("[redacted]")
    for (const result of [failed, echoed]) {
      expect(JSON.stringify(result)).not.toContain(KEY)
      expect(JSON.stringify(result)).not.toContain(TOKEN)
    }
  })
})

describe("a2aTool: reading the card is bounded by connectTimeoutMs (issue 33)", () => {
  it("a silent card server ⇒ A2AConnectError within connectTimeoutMs", async () => {
    const silent = await recorder(() => {})
    const started = performance.now()
    const error = await a2aTool({ url: silent.url, connectTimeoutMs: 300 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(A2AConnectError)
    expect((error as Error).message).toContain("no card within 300 ms")
    expect(performance.now() - started).toBeLessThan(3_000)
  })

  it("a card server that trickles its body ⇒ A2AConnectError within connectTimeoutMs", async () => {
    const timers = new Set<NodeJS.Timeout>()
    cleanups.push(async () => {
      for (const t of timers) clearInterval(t)
    })
    const trickle = await recorder((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write('{"name": "')
      // One byte at a time, never the end: every read makes progress, none finishes.
      const timer = setInterval(() => res.write("x"), 20)
      timers.add(timer)
      res.on("close", () => clearInterval(timer))
    })
    const started = performance.now()
    const error = await a2aTool({ url: trickle.url, connectTimeoutMs: 300 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(A2AConnectError)
    expect((error as Error).message).toContain("no card within 300 ms")
    expect(performance.now() - started).toBeLessThan(3_000)
  })

  it("connectTimeoutMs must be a positive number of milliseconds", async () => {
    for (const connectTimeoutMs of [0, -1, Number.NaN, 2 ** 31])
      await expect(a2aTool({ url: "http://127.0.0.1:9", connectTimeoutMs })).rejects.toMatchObject({
        code: "TNX_CONFIG",
      })
  })
})
