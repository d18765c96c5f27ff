import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { request } from "node:http"
import { join } from "node:path"
import type OpenAI from "openai"
import { afterEach, describe, expect, it } from "vitest"
import { ConfigurationError, configFromEnv } from "../src/config.js"
import { withRequestLog } from "../src/request-log.js"
import { OpenAIClient, listen, proxyFor, useHarness } from "./helpers.js"

// Issue 25: the proxy as an operator meets it — the offline model, its configuration errors,
// its request log and the refusal to serve unauthenticated beyond this machine.
const main = join(import.meta.dirname, "../dist/main.js")
const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill()
})

/** Starts dist/main.js with only `env` (and PATH); resolves once it exits or prints its URL. */
async function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? "", RELAY_STORE_URL: "sqlite::memory:", PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  children.push(child)
  const out = { stdout: "", stderr: "" }
  child.stdout?.on("data", (chunk) => {
    out.stdout += chunk
  })
  child.stderr?.on("data", (chunk) => {
    out.stderr += chunk
  })
  const exited = once(child, "exit").then(([code]) => ({ code: code as number | null }))
  const listening = new Promise<string>((resolve) => {
    child.stdout?.on("data", () => {
      const url = /listening on (http:\/\/\S+\/v1)/.exec(out.stdout)?.[1]
      if (url) resolve(url)
    })
  })
  const first = await Promise.race([exited, listening])
  return { child, out, exited, url: typeof first === "string" ? first : undefined, exit: first }
}

describe("configuration", () => {
  it("refuses a non-loopback HOST without caller keys, naming both ways out", () => {
    const env = { UPSTREAM_BASE_URL: "http://x/v1", UPSTREAM_MODEL: "m", HOST: "0.0.0.0" }
    expect(() => configFromEnv(env)).toThrow(ConfigurationError)
    expect(() => configFromEnv(env)).toThrow(
      /HOST=0\.0\.0\.0 .*RELAY_API_KEYS.*RELAY_ALLOW_UNAUTHENTICATED=1/,
    )
    // Allowed explicitly: it serves, with a warning to print.
    const open = configFromEnv({ ...env, RELAY_ALLOW_UNAUTHENTICATED: "1" })
    expect(open.host).toBe("0.0.0.0")
    expect(open.warning).toMatch(/unauthenticated/)
    // With keys, or on loopback, there is nothing to warn about.
    expect(configFromEnv({ ...env, RELAY_API_KEYS: "k1" }).warning).toBeUndefined()
    expect(configFromEnv({ ...env, HOST: "::1" }).warning).toBeUndefined()
    expect(configFromEnv({ ...env, HOST: "127.0.0.2" }).warning).toBeUndefined()
  })

  it("names caller keys (name:key), numbers unnamed ones, and refuses a key listed twice", () => {
    const config = configFromEnv({
      UPSTREAM_BASE_URL: "http://x/v1",
      UPSTREAM_MODEL: "m",
      RELAY_API_KEYS: "ci:sk-aaa, sk-bbb, bot:sk:with:colons",
    })
    expect(config.apiKeys).toEqual(["sk-aaa", "sk-bbb", "sk:with:colons"])
    expect([...(config.keyNames ?? [])]).toEqual([
      ["sk-aaa", "ci"],
      ["sk-bbb", "key-2"],
      ["sk:with:colons", "bot"],
    ])
    expect(() =>
      configFromEnv({ UPSTREAM_BASE_URL: "http://x/v1", UPSTREAM_MODEL: "m", RELAY_API_KEYS: "a:k,b:k" }),
    ).toThrow(/lists key 2 twice/)
  })

  it("without UPSTREAM_BASE_URL the upstream is the offline model, and no model is required", () => {
    expect(configFromEnv({}).upstream).toBe("offline")
    expect(() => configFromEnv({ UPSTREAM_BASE_URL: "http://x/v1" })).toThrow(/UPSTREAM_MODEL is required/)
  })

  it("a configuration error is one line on stderr and exit 1, without a stack trace or a value", async () => {
    const started = await start({
      UPSTREAM_BASE_URL: "ftp://nope",
      UPSTREAM_API_KEY: "sk-secret-value",
      PORT: "99999",
    })
    expect(started.exit).toEqual({ code: 1 })
    const lines = started.out.stderr.trimEnd().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^relay-proxy configuration: UPSTREAM_BASE_URL must be an http\(s\) URL; .*PORT/)
    expect(started.out.stderr).not.toMatch(/\n\s+at |sk-secret-value/)
  })

  it("a port in use is one line too", async () => {
    const first = await start({ RELAY_API_KEYS: "k" })
    const port = new URL(first.url as string).port
    const second = await start({ PORT: port })
    expect(second.exit).toEqual({ code: 1 })
    expect(second.out.stderr).toBe(
      `relay-proxy: port ${port} is already in use: set PORT to a free one, or 0 for any\n`,
    )
  })

  it("HOST=0.0.0.0 with RELAY_ALLOW_UNAUTHENTICATED=1 starts and warns", async () => {
    const started = await start({ HOST: "0.0.0.0", RELAY_ALLOW_UNAUTHENTICATED: "1" })
    expect(started.url).toBeDefined()
    expect(started.out.stderr).toMatch(
      /^relay-proxy: warning: HOST=0\.0\.0\.0 serves every caller unauthenticated/,
    )
  })
})

/** A request with a chosen `Host` header (fetch cannot set one): its status. */
function statusWithHost(url: string, method: string, path: string, host: string): Promise<number> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname, port, method, path, headers: { host, "content-type": "application/json" } },
      (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      },
    )
    req.on("error", reject)
    req.end(method === "POST" ? JSON.stringify({ model: "m", messages: [] }) : undefined)
  })
}

describe("the server", () => {
  it("answers a malformed Host with 400 and keeps serving", async () => {
    const started = await start({})
    const url = started.url as string
    for (const host of ["a b", "a@b", "h:99999"])
      for (const [method, path] of [
        ["POST", "/v1/chat/completions"],
        ["POST", "/v1/responses"],
        ["GET", "/v1/responses/resp_x"],
      ] as const)
        expect([host, path, await statusWithHost(url, method, path, host)]).toEqual([host, path, 400])
    expect(await statusWithHost(url, "GET", "/v1/responses/resp_x", new URL(url).host)).toBe(404)
  })
})

describe("the offline model and the request log, driven by the openai SDK", () => {
  it("answers, calls the caller's tool, reports its result; one log line per request, names not keys", async () => {
    const started = await start({ RELAY_API_KEYS: "alice:sk-alice-123456" })
    expect(started.out.stdout).toMatch(/→ openai the scripted offline model/)
    const openai = new OpenAIClient({ baseURL: started.url, apiKey: "sk-alice-123456", maxRetries: 0 })

    const plain = await openai.chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "hi" }],
    })
    expect(plain.choices[0]?.message.content).toBe("(offline model) You said: hi")

    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: "function",
        function: {
          name: "lookup",
          parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
        },
      },
    ]
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "order 7" }]
    const called = await openai.chat.completions.create({ model: "any", messages, tools })
    const call = called.choices[0]?.message.tool_calls?.[0]
    expect(call?.type === "function" && call.function.name).toBe("lookup")
    expect(call?.type === "function" && JSON.parse(call.function.arguments)).toEqual({ q: "order 7" })
    const done = await openai.chat.completions.create({
      model: "any",
      tools,
      messages: [
        ...messages,
        called.choices[0]?.message as OpenAI.ChatCompletionMessageParam,
        { role: "tool", tool_call_id: call?.id ?? "", content: "shipped" },
      ],
    })
    expect(done.choices[0]?.message.content).toBe("(offline model) The tool answered: shipped")

    await expect(
      new OpenAIClient({ baseURL: started.url, apiKey: "sk-wrong", maxRetries: 0 }).models.list(),
    ).rejects.toMatchObject({ status: 401 })
    await fetch(`${started.url}/models?key=sk-alice-123456`)

    const log = started.out.stdout.split("\n").filter((line) => /^(GET|POST) /.test(line))
    expect(log).toHaveLength(5)
    expect(log[0]).toMatch(/^POST \/v1\/chat\/completions 200 \d+ms caller=alice$/)
    expect(log[2]).toMatch(/^POST \/v1\/chat\/completions 200 \d+ms caller=alice$/)
    expect(log[3]).toMatch(/^GET \/v1\/models 401 \d+ms caller=unknown$/)
    expect(log[4]).toMatch(/^GET \/v1\/models 401 \d+ms caller=-$/)
    expect(started.out.stdout).not.toMatch(/sk-alice|sk-wrong/)
  })
})

describe("withRequestLog", () => {
  it("logs a handler that throws as a 500 and rethrows", async () => {
    const lines: string[] = []
    const clock = [10, 14.6]
    const handler = withRequestLog(
      () => {
        throw new Error("boom")
      },
      { write: (line) => lines.push(line), now: () => clock.shift() ?? 0 },
    )
    await expect(handler(new Request("http://h/v1/x?secret=1", { method: "DELETE" }))).rejects.toThrow("boom")
    expect(lines).toEqual(["DELETE /v1/x 500 5ms caller=-"])
  })
})

describe("GET /v1/responses/{id} (responses.retrieve)", () => {
  const h = useHarness()

  it("returns a stored response as it was created; store: false, unknown ids and other callers get a 404", async () => {
    const listening = await listen(proxyFor("openai", h.server, h.store, { apiKeys: ["key-a", "key-b"] }))
    try {
      const a = new OpenAIClient({ baseURL: listening.baseURL, apiKey: "key-a", maxRetries: 0 })
      const b = new OpenAIClient({ baseURL: listening.baseURL, apiKey: "key-b", maxRetries: 0 })
      h.server.enqueue({ text: "Stored." }, { text: "Not stored." })
      const created = await a.responses.create({ model: "any", input: "keep this" })
      const retrieved = await a.responses.retrieve(created.id)
      expect(retrieved).toEqual(created)
      expect(retrieved.output_text).toBe("Stored.")

      const unstored = await a.responses.create({ model: "any", input: "forget this", store: false })
      await expect(a.responses.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 })
      await expect(a.responses.retrieve("resp_unknown")).rejects.toMatchObject({
        status: 404,
        message: expect.stringContaining('no stored response with id "resp_unknown"'),
      })
      // Another caller's response is reported exactly like an unknown one.
      await expect(b.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 })
    } finally {
      await listening.close()
    }
  })
})

describe("DELETE /v1/responses/{id} (responses.delete)", () => {
  const h = useHarness()

  it("forgets the response and its items for its owner only; later responses still continue", async () => {
    const listening = await listen(proxyFor("openai", h.server, h.store, { apiKeys: ["key-a", "key-b"] }))
    try {
      const a = new OpenAIClient({ baseURL: listening.baseURL, apiKey: "key-a", maxRetries: 0 })
      const b = new OpenAIClient({ baseURL: listening.baseURL, apiKey: "key-b", maxRetries: 0 })
      h.server.enqueue({ text: "First." }, { text: "Second." }, { text: "Third." })
      const first = await a.responses.create({ model: "any", input: "one" })
      const second = await a.responses.create({ model: "any", input: "two", previous_response_id: first.id })
      const answer = first.output.find((item) => item.type === "message")
      expect(answer?.id).toBeDefined()

      // Another caller cannot delete it, and is told it does not exist; the owner still has it.
      await expect(b.responses.delete(first.id)).rejects.toMatchObject({ status: 404 })
      expect((await a.responses.retrieve(first.id)).output_text).toBe("First.")

      // The wire body is OpenAI's; the SDK's `delete` resolves.
      const raw = await fetch(`${listening.baseURL}/responses/${first.id}`, {
        method: "DELETE",
        headers: { authorization: "Bearer key-a" },
      })
      expect(raw.status).toBe(200)
      expect(await raw.json()).toEqual({ id: first.id, object: "response", deleted: true })
      await expect(a.responses.delete(first.id)).rejects.toMatchObject({ status: 404 })

      await expect(a.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 })
      await expect(
        a.responses.create({ model: "any", input: "again", previous_response_id: first.id }),
      ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("previous_response_id") })
      await expect(
        a.responses.create({ model: "any", input: [{ type: "item_reference", id: answer!.id }] }),
      ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("item_reference") })

      // The response stored after it kept its own copy of the conversation.
      const third = await a.responses.create({
        model: "any",
        input: "three",
        previous_response_id: second.id,
      })
      expect(third.output_text).toBe("Third.")
      const sent = h.server.requests.at(-1)?.body as { messages: { role: string; content: unknown }[] }
      expect(JSON.stringify(sent.messages)).toContain("First.")
    } finally {
      await listening.close()
    }
  })
})
