import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join, resolve } from "node:path"
import { toNodeListener } from "@toolnexus/ui"
import { createAgentServer, parseTokens } from "./agent-server.js"

const dataDir = resolve(process.env.MCP_AGENT_DATA ?? join(process.cwd(), ".data"))
// stdout is the MCP stream under stdio: everything said goes to stderr.
const say = (line: string) => process.stderr.write(`${line}\n`)
const [command = "serve", ...args] = process.argv.slice(2)

/** Streamable HTTP on 127.0.0.1 (`PORT`, default 3333; 0 picks one); prints the URL on stdout. */
async function serveHttp(): Promise<void> {
  const ttl = process.env.MCP_AGENT_STATE_TTL_MS
  const server = await createAgentServer({
    dataDir,
    tokens: parseTokens(process.env.MCP_AGENT_TOKENS),
    ...(ttl ? { stateTtlMs: Number(ttl) } : {}),
  })
  const http = createServer(toNodeListener(server.mcp.fetch))
  const port = Number(process.env.PORT ?? 3333)
  await new Promise<void>((done) => http.listen(port, "127.0.0.1", done))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`
  say(`[serve] pid ${process.pid}, model: ${server.model}, data: ${dataDir}`)
  process.stdout.write(`${url}\n`)
  const stop = async () => {
    http.closeAllConnections()
    http.close()
    await server.close()
    process.exit(0)
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
}

/** MCP over this process's stdin and stdout (what Claude Desktop and VS Code spawn). */
async function serveStdio(): Promise<void> {
  const server = await createAgentServer({ dataDir })
  say(`[stdio] pid ${process.pid}, model: ${server.model}, data: ${dataDir}`)
  await server.mcp.connectStdio()
  process.stdin.once("end", () => void server.close())
}

/** The open requests, from any process on the data folder. */
async function pending(): Promise<void> {
  const server = await createAgentServer({ dataDir, sweepEveryMs: false })
  try {
    const open = await server.host.listPending()
    if (open.length === 0) say("nothing is waiting")
    for (const entry of open)
      process.stdout.write(
        `${entry.request.id}\t${entry.request.kind}\t${entry.request.prompt}\t(since ${entry.since})\n`,
      )
  } finally {
    await server.close()
  }
}

/** Answers one request from this (second) process; the run resumes here and finishes. */
async function answer(id: string | undefined, decision: string | undefined, reason?: string): Promise<void> {
  if (!id || (decision !== "approve" && decision !== "decline")) {
    say("usage: answer <request id> approve|decline [reason]")
    process.exitCode = 2
    return
  }
  const server = await createAgentServer({ dataDir, sweepEveryMs: false })
  try {
    const ok = decision === "approve"
    const { runId } = await server.host.deliverAnswer(
      ok ? { id, ok } : { id, ok, reason: reason ?? "declined" },
    )
    const result = (await server.host.result(runId)) as { status: string; text: string }
    process.stdout.write(
      `[answer] pid ${process.pid}: ${decision}d ${id}; run ${runId} ${result.status}: ${result.text}\n`,
    )
  } catch (error) {
    say(`[answer] ${(error as Error).message}`)
    process.exitCode = 1
  } finally {
    await server.close()
  }
}

if (command === "serve") await serveHttp()
else if (command === "stdio") await serveStdio()
else if (command === "pending") await pending()
else if (command === "answer") await answer(args[0], args[1], args[2])
else {
  say("usage: main.js serve | stdio | pending | answer <request id> approve|decline [reason]")
  process.exitCode = 2
}
