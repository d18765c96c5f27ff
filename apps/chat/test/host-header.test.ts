import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type ChatServer, startChatServer } from "../src/server.js"

let server: ChatServer
const dir = mkdtempSync(join(tmpdir(), "tnx-chat-host-"))

beforeAll(async () => {
  server = await startChatServer({ databasePath: join(dir, "chat.db"), port: 0 })
})

afterAll(async () => {
  await server?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** One request with the headers given (fetch cannot set `Host`): the status and body. */
function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: server.port, method, path, headers }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on("error", reject)
    req.end(body)
  })
}

const turn = JSON.stringify({
  id: "host-chat",
  messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hello" }] }],
  trigger: "submit-message",
})

it("a malformed Host is 400 on every route: the page, the chat post and its stream", async () => {
  const json = { "content-type": "application/json" }
  for (const host of ["a b", "a@b", "h:99999"]) {
    for (const [method, path, body] of [
      ["GET", "/", undefined],
      ["GET", "/page.js", undefined],
      ["POST", "/api/chat", turn],
      ["GET", "/api/chat/host-chat/stream", undefined],
    ] as const) {
      const reply = await send(method, path, { host, ...json }, body)
      expect([host, method, path, reply.status]).toEqual([host, method, path, 400])
      expect(JSON.parse(reply.body)).toMatchObject({ error: { code: "TNX_BAD_REQUEST" } })
    }
  }
  // The server still serves well-formed requests.
  const own = new URL(server.url).host
  expect((await send("GET", "/", { host: own })).status).toBe(200)
  expect((await send("GET", "/api/chat/host-chat/stream", { host: own })).status).toBe(204)
})

it("the chat endpoint takes same-origin JSON posts and refuses cross-site ones", async () => {
  const own = new URL(server.url).host
  const post = (headers: Record<string, string>) =>
    send("POST", "/api/chat", { host: own, ...headers }, turn.replace("host-chat", `c-${Math.random()}`))
  expect((await post({ origin: server.url, "content-type": "application/json" })).status).toBe(200)
  expect((await post({ origin: "https://evil.example", "content-type": "application/json" })).status).toBe(
    403,
  )
  expect((await post({ origin: server.url, "content-type": "text/plain" })).status).toBe(415)
})
