// The pieces ui-handler.mjs and ui-handler-instructions.mjs share: the helper processes (the
// fake LLM endpoint, the HTTP driver), the node:http servers and the hand-written SSE floor.
import { fork } from "node:child_process"
import { once } from "node:events"
import { createServer } from "node:http"

/** Forks a helper script of this folder (its CPU is never the measured process's). */
export function forkHelper(name) {
  return fork(new URL(`./${name}`, import.meta.url), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    execArgv: [],
  })
}

/** The fake LLM endpoint's base URL (`ui-fake-server.mjs` in its own process). */
export async function fakeModel() {
  const child = forkHelper("ui-fake-server.mjs")
  const [ready] = await once(child, "message")
  return { child, baseUrl: `${ready.url}/v1` }
}

/** Serves `listener` on 127.0.0.1. */
export async function listen(listener) {
  const server = createServer(listener)
  // Under valgrind a served process is slow enough for Node's 5 s idle close to cut the
  // driver's kept-alive connection between batches (ECONNRESET): keep it open.
  server.keepAliveTimeout = 600_000
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, url: `http://127.0.0.1:${server.address().port}/api/chat` }
}

/**
 * The floor of serving a turn on node:http: a hand-written SSE endpoint around client.ask
 * (the body parsed, each event one `data:` frame of its JSON, no protocol rules).
 */
export function byHandListener(client, toolkit) {
  return (req, res) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", async () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString())
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      await client.ask("hi", { id, toolkit, onEvent: (ev) => res.write(`data: ${JSON.stringify(ev)}\n\n`) })
      res.end("data: [DONE]\n\n")
    })
  }
}

let seq = 0
/** Has the driver process post `turns` chat turns to `url`, one after the other. */
export async function driveTurns(driver, url, turns) {
  driver.send({ url, turns, prefix: `http-${++seq}` })
  const [reply] = await once(driver, "message")
  if (!reply.ok) throw new Error(reply.error)
}
