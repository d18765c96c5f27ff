import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest"
import { type ChatServer, consoleLogger, startChatServer } from "../src/server.js"

let server: ChatServer
const dir = mkdtempSync(join(tmpdir(), "tnx-chat-log-"))

beforeAll(async () => {
  server = await startChatServer({ databasePath: join(dir, "chat.db"), port: 0 })
})

afterAll(async () => {
  await server?.close()
  rmSync(dir, { recursive: true, force: true })
})

afterEach(() => {
  vi.restoreAllMocks()
})

it("the server prints a refused post as one line with its code, by default", async () => {
  const log = vi.spyOn(console, "log").mockImplementation(() => {})
  const res = await fetch(`${server.url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: "{}",
  })
  expect(res.status).toBe(415)
  expect(log).toHaveBeenCalledTimes(1)
  const line = String(log.mock.calls[0]?.[0])
  expect(line).toContain("TNX_UNSUPPORTED_MEDIA_TYPE")
  expect(line).not.toContain("\n")
})

it("consoleLogger writes a failed run as one line on stderr with its code and conversation", () => {
  const error = vi.spyOn(console, "error").mockImplementation(() => {})
  consoleLogger.error("chat run failed in conversation c1: TNX_STORE: no such folder", {
    code: "TNX_STORE",
    conversationId: "c1",
  })
  expect(error).toHaveBeenCalledTimes(1)
  const line = String(error.mock.calls[0]?.[0])
  expect(line).toMatch(/^\[chat\] chat run failed .*"code":"TNX_STORE","conversationId":"c1"/)
  expect(line).not.toContain("\n")
})
