import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { serve } from "@hono/node-server"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { openStore } from "@toolnexus/durable"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { configFromEnv } from "../src/config.js"
import { fnTool, proxyFor } from "./helpers.js"

let server: FakeLLMServer
let dir: string
beforeAll(async () => {
  server = await createFakeLLMServer()
  dir = mkdtempSync(join(tmpdir(), "relay-proxy-"))
})
beforeEach(() => server.reset())
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("durability", () => {
  it("a new app object on the same SQLite file continues the conversation", async () => {
    const url = `sqlite:${join(dir, "relay.db")}`
    server.enqueue({ toolCalls: [{ id: "call_db1", name: "lookup", arguments: { id: 7 } }] }, (req) => ({
      text: `found ${req.toolResults[0]?.content}`,
    }))
    const messages: any[] = [{ role: "user", content: "look up 7" }]

    const storeA = await openStore(url)
    const first = await proxyFor("anthropic", server, storeA).request("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ messages, tools: [fnTool("lookup")] }),
    })
    const firstJson = (await first.json()) as any
    expect(firstJson.choices[0].finish_reason).toBe("tool_calls")
    await storeA.close() // as if the process had exited

    const storeB = await openStore(url)
    try {
      const second = await proxyFor("anthropic", server, storeB).request("/v1/chat/completions", {
        method: "POST",
        body: JSON.stringify({
          messages: [
            ...messages,
            firstJson.choices[0].message,
            { role: "tool", tool_call_id: firstJson.choices[0].message.tool_calls[0].id, content: "#7" },
          ],
        }),
      })
      expect(second.status).toBe(200)
      expect(((await second.json()) as any).choices[0].message.content).toBe("found #7")
      expect(server.requests).toHaveLength(2)
      expect(server.requests[1]?.toolResults).toEqual([{ id: "call_db1", content: "#7", isError: false }])
      const conversation = second.headers.get("x-relay-conversation")!
      expect(await storeB.getPending(conversation)).toBeUndefined()
      expect(await storeB.get(conversation)).toHaveLength(4)
    } finally {
      await storeB.close()
    }
  })

  it("works through a real listening server with fetch", async () => {
    const store = await openStore("sqlite::memory:")
    server.enqueue({ toolCalls: [{ id: "call_http", name: "now", arguments: {} }] }, (req) => ({
      text: `it is ${req.toolResults[0]?.content}`,
    }))
    const app = proxyFor("openai", server, store)
    const listening = await new Promise<{ close: () => Promise<void>; url: string }>((resolve) => {
      const http = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
        resolve({
          url: `http://127.0.0.1:${info.port}/v1`,
          close: () => new Promise((done) => http.close(() => done())),
        }),
      )
    })
    try {
      const post = (body: unknown) =>
        fetch(`${listening.url}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Bearer anything" },
          body: JSON.stringify(body),
        })
      const messages: any[] = [{ role: "user", content: "time?" }]
      const r1 = await post({ model: "gpt-x", messages, tools: [fnTool("now")] })
      expect(r1.status).toBe(200)
      expect(r1.headers.get("content-type")).toMatch(/application\/json/)
      const j1 = (await r1.json()) as any
      const callId = j1.choices[0].message.tool_calls[0].id
      expect(j1.choices[0].message.tool_calls[0].function.name).toBe("now")
      messages.push(j1.choices[0].message, { role: "tool", tool_call_id: callId, content: "noon" })
      const r2 = await post({ model: "gpt-x", messages, tools: [fnTool("now")] })
      const j2 = (await r2.json()) as any
      expect(j2.choices[0]).toMatchObject({ finish_reason: "stop", message: { content: "it is noon" } })
      const bad = await post({ messages: "nope" })
      expect(bad.status).toBe(400)
      expect(((await bad.json()) as any).error.type).toBe("invalid_request_error")
    } finally {
      await listening.close()
      await store.close()
    }
  })
})

describe("configFromEnv", () => {
  it("applies the defaults", () => {
    const config = configFromEnv({ UPSTREAM_BASE_URL: "http://x/v1", UPSTREAM_MODEL: "m" })
    expect(config).toEqual({
      upstream: { baseUrl: "http://x/v1", style: "openai", model: "m" },
      storeUrl: "sqlite:./.data/relay.db",
      port: 8787,
      host: "127.0.0.1",
    })
  })

  it("reads caller keys and the body limit", () => {
    const config = configFromEnv({
      UPSTREAM_BASE_URL: "http://x/v1",
      UPSTREAM_MODEL: "m",
      RELAY_API_KEYS: " key-a, ,key-b ",
      RELAY_MAX_BODY_BYTES: "2048",
    })
    expect(config.apiKeys).toEqual(["key-a", "key-b"])
    expect(config.maxBodyBytes).toBe(2048)
    expect(() =>
      configFromEnv({ UPSTREAM_BASE_URL: "http://x", UPSTREAM_MODEL: "m", RELAY_MAX_BODY_BYTES: "1.5" }),
    ).toThrow(/RELAY_MAX_BODY_BYTES/)
  })

  it("lists every problem and never echoes the key", () => {
    const attempt = () =>
      // (Without UPSTREAM_BASE_URL at all the proxy runs on its offline model: no problem there.)
      configFromEnv({
        UPSTREAM_BASE_URL: "api.example.com",
        UPSTREAM_STYLE: "gemini",
        UPSTREAM_API_KEY: "sk-hidden",
        PORT: "x",
      })
    expect(attempt).toThrow(/UPSTREAM_BASE_URL.*UPSTREAM_MODEL.*UPSTREAM_STYLE.*PORT/)
    expect(attempt).not.toThrow(/sk-hidden/)
  })
})
