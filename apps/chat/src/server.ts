import { readFile } from "node:fs/promises"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { type Logger, type RunHost, createToolkit, hostAgent } from "@toolnexus/core"
import { createStoreHost } from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import { toNodeListener } from "@toolnexus/ui"
import { createChatHandler, loadChat } from "@toolnexus/ui/ai-sdk"
import { scriptedClient } from "./model.js"
import { type Refund, chatTools } from "./tools.js"

/** Where the page bundle is: dist/page.js, one level up from both src/ and dist/. */
const PAGE_BUNDLE = new URL("../dist/page.js", import.meta.url)

const HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>toolnexus chat</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:16px/1.4 system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem;color:#222}
.msg{margin:.5rem 0;padding:.5rem .75rem;border-radius:.5rem}.user{background:#e8f0fe}.assistant{background:#f4f4f4}
.card{border:1px solid #c9c9c9;border-radius:.5rem;padding:.5rem .75rem;margin:.25rem 0;background:#fff}
button{margin-right:.5rem}form.send{display:flex;gap:.5rem;margin-top:1rem}form.send input{flex:1}
</style></head><body><h1>Support chat</h1><div id="root"></div><script type="module" src="/page.js"></script></body></html>`

/** The page at `/` and its bundle at `/page.js`; anything else is a 404. */
async function servePage(req: Request): Promise<Response> {
  const { pathname } = new URL(req.url)
  if (req.method === "GET" && pathname === "/")
    return new Response(HTML, { headers: { "content-type": "text/html; charset=utf-8" } })
  if (req.method === "GET" && pathname === "/page.js") {
    try {
      const js = await readFile(PAGE_BUNDLE)
      return new Response(js, { headers: { "content-type": "text/javascript; charset=utf-8" } })
    } catch {
      return new Response("dist/page.js is missing: run the build first", {
        status: 500,
        headers: { "content-type": "text/plain" },
      })
    }
  }
  return new Response("not found", { status: 404, headers: { "content-type": "text/plain" } })
}

/** `GET /api/chat/<id>/messages`: the chat's stored messages for `useChat({ messages })` after a reload. */
const MESSAGES = /^\/api\/chat\/([^/]+)\/messages$/

/** The messages route over the chats' host: the transcript and the waiting card, as `loadChat` reads them. */
function messagesRoute(host: RunHost): (req: Request) => Promise<Response> {
  return async (req) => {
    const match = MESSAGES.exec(new URL(req.url).pathname)
    if (req.method !== "GET" || !match?.[1])
      return new Response("not found", { status: 404, headers: { "content-type": "text/plain" } })
    let chatId: string
    try {
      chatId = decodeURIComponent(match[1])
    } catch {
      return Response.json({ error: { code: "TNX_BAD_REQUEST", message: "bad chat id" } }, { status: 400 })
    }
    try {
      return Response.json(await loadChat({ host, chatId }), { headers: { "cache-control": "no-store" } })
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (code === "TNX_CONFIG")
        return Response.json(
          { error: { code: "TNX_BAD_REQUEST", message: (error as Error).message } },
          { status: 400 },
        )
      throw error
    }
  }
}

/**
 * The server's log: one line per entry (failed runs on stderr, refused posts on stdout), the
 * entry's fields as JSON so a log collector can read them.
 */
export const consoleLogger: Logger = {
  info: (message, data) => console.log(logLine(message, data)),
  error: (message, data) => console.error(logLine(message, data)),
}

function logLine(message: string, data: Record<string, unknown> | undefined): string {
  return `[chat] ${message}${data ? ` ${JSON.stringify(data)}` : ""}`
}

/** A running chat server. */
export interface ChatServer {
  url: string
  port: number
  refunds: Refund[]
  close(): Promise<void>
}

/**
 * Starts the chat: the page at `/`, the AI SDK chat endpoint at `/api/chat` (and its
 * `…/<id>/stream` resumption), a chat's stored messages at `GET /api/chat/<id>/messages`
 * (`loadChat`, for a reloaded page). Every chat is a run of the hosted agent `support` on a
 * store host over the SQLite file `databasePath` (run id = chat id), where it parks. Failed
 * runs and refused posts go to `logger` (default `consoleLogger`).
 */
export async function startChatServer(opts: {
  databasePath: string
  port?: number
  hostname?: string
  logger?: Logger
}): Promise<ChatServer> {
  const store = new SqliteStore({ path: opts.databasePath })
  const client = scriptedClient(store)
  const refunds: Refund[] = []
  const toolkit = await createToolkit({ extraTools: chatTools(refunds) })
  const host = createStoreHost({ store, agents: [hostAgent({ name: "support", client, toolkit })] })
  // Both routes go through toNodeListener: a request with a malformed Host is a 400 on each.
  const chat = toNodeListener(
    createChatHandler({ host, agent: "support", logger: opts.logger ?? consoleLogger }),
  )
  const messages = toNodeListener(messagesRoute(host))
  const page = toNodeListener(servePage)
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/"
    if (MESSAGES.test(path)) return messages(req, res)
    return (path.startsWith("/api/chat") ? chat : page)(req, res)
  })
  await new Promise<void>((resolve) =>
    server.listen(opts.port ?? 3000, opts.hostname ?? "127.0.0.1", resolve),
  )
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${opts.hostname ?? "127.0.0.1"}:${port}`,
    port,
    refunds,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await host.close()
      await store.close()
    },
  }
}
