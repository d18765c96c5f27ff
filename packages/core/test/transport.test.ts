import { afterEach, describe, expect, it, vi } from "vitest"
import { createClient } from "../src/client/create-client.js"
import type { LLMErrorInfo } from "../src/client/retry.js"
import {
  AbortError,
  ConfigError,
  LLMHttpError,
  LLMResponseError,
  NetworkError,
  ToolnexusError,
} from "../src/errors.js"
import { STYLES, clientFor, useFakeServer } from "./helpers.js"

const ctx = useFakeServer()
const KEY = "sk-test-secret"

/** Runs `body` and returns what it threw; fails the test when it resolves. */
async function failure(body: () => Promise<unknown>): Promise<Error> {
  try {
    await body()
  } catch (error) {
    return error as Error
  }
  throw new Error("expected a rejection, but the call resolved")
}

/** Every string of an error worth checking for secrets: message, stack, cause chain. */
function errorText(error: unknown): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    if (current instanceof Error) parts.push(current.message, String(current.stack))
    else parts.push(String(current))
    parts.push(JSON.stringify(current, Object.getOwnPropertyNames(current as object)))
    current = (current as { cause?: unknown }).cause
  }
  return parts.join("\n")
}

describe.each(STYLES)("endpoint, headers and keys (%s)", (style) => {
  const saved = { ...process.env }
  afterEach(() => {
    for (const name of ["OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"]) {
      if (saved[name] === undefined) delete process.env[name]
      else process.env[name] = saved[name]
    }
  })

  function clearKeys() {
    delete process.env.OPENAI_API_KEY
    delete process.env.OPENROUTER_API_KEY
    delete process.env.ANTHROPIC_API_KEY
  }

  it("posts to the style's endpoint path", async () => {
    const { server } = ctx
    server.enqueue({ text: "a" }, { text: "b" }, { text: "c" })
    const client = clientFor(style, server)
    await client.run("hi")
    if (style === "openai-responses") {
      expect(server.requests[0]?.path).toBe("/v1/responses")
      await clientFor(style, server, { baseUrl: server.url }).run("hi")
      expect(server.requests[1]?.path).toBe("/responses")
      await clientFor(style, server, { baseUrl: `${server.url}/v1/` }).run("hi")
      expect(server.requests[2]?.path).toBe("/v1/responses")
    } else if (style === "openai") {
      expect(server.requests[0]?.path).toBe("/v1/chat/completions")
      // Without /v1 in the base URL, nothing is added for OpenAI.
      await clientFor(style, server, { baseUrl: server.url }).run("hi")
      expect(server.requests[1]?.path).toBe("/chat/completions")
      await clientFor(style, server, { baseUrl: `${server.url}/v1/` }).run("hi")
      expect(server.requests[2]?.path).toBe("/v1/chat/completions")
    } else {
      expect(server.requests[0]?.path).toBe("/v1/messages")
      // A base URL already ending with /v1 (or /v1/) does not get a second one.
      await clientFor(style, server, { baseUrl: `${server.url}/v1` }).run("hi")
      expect(server.requests[1]?.path).toBe("/v1/messages")
      await clientFor(style, server, { baseUrl: `${server.url}/v1/` }).run("hi")
      expect(server.requests[2]?.path).toBe("/v1/messages")
    }
    expect(server.requests.every((r) => r.headers["content-type"] === "application/json")).toBe(true)
  })

  it("sends the style's auth headers", async () => {
    const { server } = ctx
    server.enqueue({ text: "ok" })
    await clientFor(style, server).run("hi")
    const headers = server.requests[0]?.headers ?? {}
    if (style !== "anthropic") {
      expect(headers.authorization).toBe(`Bearer ${KEY}`)
      expect(headers["x-api-key"]).toBeUndefined()
      expect(headers["anthropic-version"]).toBeUndefined()
    } else {
      expect(headers["x-api-key"]).toBe(KEY)
      expect(headers["anthropic-version"]).toBe("2023-06-01")
      expect(headers.authorization).toBeUndefined()
    }
  })

  it("reads the API key from the environment when none is given", async () => {
    const { server } = ctx
    clearKeys()
    process.env.OPENAI_API_KEY = "sk-env-openai"
    process.env.OPENROUTER_API_KEY = "sk-env-router"
    process.env.ANTHROPIC_API_KEY = "sk-env-anthropic"
    server.enqueue({ text: "1" }, { text: "2" })
    await clientFor(style, server, { apiKey: undefined }).run("hi")
    if (style !== "anthropic") {
      expect(server.requests[0]?.headers.authorization).toBe("Bearer sk-env-openai")
      // OPENROUTER_API_KEY is the fallback when OPENAI_API_KEY is absent.
      delete process.env.OPENAI_API_KEY
      await clientFor(style, server, { apiKey: undefined }).run("hi")
      expect(server.requests[1]?.headers.authorization).toBe("Bearer sk-env-router")
    } else {
      expect(server.requests[0]?.headers["x-api-key"]).toBe("sk-env-anthropic")
      // The OpenAI keys are never sent to an Anthropic-style endpoint.
      delete process.env.ANTHROPIC_API_KEY
      await clientFor(style, server, { apiKey: undefined }).run("hi")
      expect(server.requests[1]?.headers["x-api-key"]).toBeUndefined()
      expect(server.requests[1]?.headers.authorization).toBeUndefined()
    }
  })

  it("an explicit apiKey wins over the environment; no key at all sends no auth header", async () => {
    const { server } = ctx
    clearKeys()
    process.env.OPENAI_API_KEY = "sk-env-openai"
    process.env.ANTHROPIC_API_KEY = "sk-env-anthropic"
    server.enqueue({ text: "1" }, { text: "2" })
    await clientFor(style, server, { apiKey: "sk-explicit" }).run("hi")
    const auth = (i: number) =>
      style !== "anthropic"
        ? server.requests[i]?.headers.authorization
        : server.requests[i]?.headers["x-api-key"]
    expect(auth(0)).toBe(style !== "anthropic" ? "Bearer sk-explicit" : "sk-explicit")
    clearKeys()
    await clientFor(style, server, { apiKey: undefined }).run("hi")
    expect(auth(1)).toBeUndefined()
  })

  it("sends custom headers beside the defaults", async () => {
    const { server } = ctx
    server.enqueue({ text: "ok" })
    await clientFor(style, server, {
      headers: { "x-team": "blue", "HTTP-Referer": "https://app.example" },
    }).run("hi")
    const headers = server.requests[0]?.headers ?? {}
    expect(headers["x-team"]).toBe("blue")
    expect(headers["http-referer"]).toBe("https://app.example")
    expect(headers[style !== "anthropic" ? "authorization" : "x-api-key"]).toContain(KEY)
  })

  it("a custom header overrides the default of the same name, whatever its case", async () => {
    const { server } = ctx
    server.enqueue({ text: "ok" })
    const name = style !== "anthropic" ? "Authorization" : "X-Api-Key"
    const value = style !== "anthropic" ? "Bearer sk-override" : "sk-override"
    await clientFor(style, server, { headers: { [name]: value } }).run("hi")
    const headers = server.requests[0]?.headers ?? {}
    expect(headers[name.toLowerCase()]).toBe(value)
  })
})

describe.each(STYLES)("retries (%s)", (style) => {
  it.each([429, 503])("retries HTTP %i (retry-after: 0) and then succeeds", async (status) => {
    const { server } = ctx
    server.enqueue(
      { status, headers: { "retry-after": "0" } },
      { status, headers: { "retry-after": "0" } },
      { text: "finally" },
    )
    const result = await clientFor(style, server, { retries: 2 }).run("hi")
    expect(result.text).toBe("finally")
    expect(server.requests).toHaveLength(3)
  })

  it.each([500, 502, 504])("retries HTTP %i", async (status) => {
    const { server } = ctx
    server.enqueue({ status }, { text: "ok" })
    const result = await clientFor(style, server).run("hi")
    expect(result.text).toBe("ok")
    expect(server.requests).toHaveLength(2)
  })

  it("honours a delay-seconds Retry-After instead of the backoff", async () => {
    const { server } = ctx
    // With a one-minute backoff base the test could only pass in time by honouring `retry-after: 0`.
    server.enqueue({ status: 429, headers: { "retry-after": "0" } }, { text: "ok" })
    const result = await clientFor(style, server, { retryBaseMs: 60_000 }).run("hi")
    expect(result.text).toBe("ok")
    expect(server.requests).toHaveLength(2)
  }, 5_000)

  it("honours an HTTP-date Retry-After, capped by maxRetryDelayMs", async () => {
    const { server } = ctx
    // An hour away: only the cap keeps the test short.
    const inAnHour = new Date(Date.now() + 3_600_000).toUTCString()
    server.enqueue({ status: 503, headers: { "retry-after": inAnHour } }, { text: "ok" })
    const started = performance.now()
    const result = await clientFor(style, server, { maxRetryDelayMs: 300 }).run("hi")
    expect(result.text).toBe("ok")
    expect(server.requests).toHaveLength(2)
    expect(performance.now() - started).toBeGreaterThanOrEqual(250)
  }, 5_000)

  it("does not retry a 400: LLMHttpError with status, code and body excerpt", async () => {
    const { server } = ctx
    server.enqueue({ status: 400, text: "messages: field required" }, { text: "never" })
    const error = await failure(() => clientFor(style, server).run("hi"))
    expect(error).toBeInstanceOf(LLMHttpError)
    expect(error).toBeInstanceOf(ToolnexusError)
    const http = error as LLMHttpError
    expect(http.status).toBe(400)
    expect(http.code).toBe("TNX_LLM_HTTP")
    expect(http.isRetryable).toBe(false)
    expect(http.bodyExcerpt).toContain("messages: field required")
    expect(http.message).toContain("400")
    expect(http.message).toContain("messages: field required")
    expect(server.requests).toHaveLength(1)
  })

  it("cuts a long error body to an excerpt", async () => {
    const { server } = ctx
    server.enqueue({ status: 422, rawBody: "x".repeat(5_000) })
    const error = (await failure(() => clientFor(style, server).run("hi"))) as LLMHttpError
    expect(error).toBeInstanceOf(LLMHttpError)
    expect(error.bodyExcerpt.length).toBeLessThan(600)
    expect(error.message.length).toBeLessThan(700)
  })

  it("throws LLMHttpError after exactly retries + 1 requests", async () => {
    const { server } = ctx
    server.addRule({ match: () => true, reply: { status: 503, text: "overloaded" } })
    const error = await failure(() => clientFor(style, server, { retries: 3 }).run("hi"))
    expect(error).toBeInstanceOf(LLMHttpError)
    expect((error as LLMHttpError).status).toBe(503)
    expect(server.requests).toHaveLength(4)

    server.reset()
    server.addRule({ match: () => true, reply: { status: 429 } })
    const none = await failure(() => clientFor(style, server, { retries: 0 }).run("hi"))
    expect((none as LLMHttpError).status).toBe(429)
    expect(server.requests).toHaveLength(1)
  })

  it("onError sees each failure and can fail fast", async () => {
    const { server } = ctx
    server.enqueue({ status: 503 }, { text: "never" })
    const seen: LLMErrorInfo[] = []
    const client = clientFor(style, server, {
      onError: (info) => {
        seen.push(info)
        return "fail"
      },
    })
    const error = await failure(() => client.run("hi"))
    expect(error).toBeInstanceOf(LLMHttpError)
    expect(server.requests).toHaveLength(1)
    expect(seen).toEqual([{ error, status: 503, attempt: 1, retryable: true }])
  })

  it("onError can retry a status that is not retryable by default, within `retries`", async () => {
    const { server } = ctx
    server.enqueue({ status: 400 }, { status: 400 }, { text: "ok" })
    const seen: LLMErrorInfo[] = []
    const client = clientFor(style, server, {
      retries: 2,
      onError: (info) => {
        seen.push(info)
        return "retry"
      },
    })
    const result = await client.run("hi")
    expect(result.text).toBe("ok")
    expect(seen.map((i) => [i.status, i.attempt, i.retryable])).toEqual([
      [400, 1, false],
      [400, 2, false],
    ])
    expect(seen.every((i) => i.error instanceof LLMHttpError)).toBe(true)

    // "retry" cannot exceed the retry budget.
    server.reset()
    server.addRule({ match: () => true, reply: { status: 400 } })
    const error = await failure(() =>
      clientFor(style, server, { retries: 1, onError: () => "retry" }).run("hi"),
    )
    expect(error).toBeInstanceOf(LLMHttpError)
    expect(server.requests).toHaveLength(2)
  })

  it("retries a dropped connection, then succeeds", async () => {
    const { server } = ctx
    server.enqueue({ dropConnection: true }, { text: "back" })
    const result = await clientFor(style, server).run("hi")
    expect(result.text).toBe("back")
    expect(server.requests).toHaveLength(2)
  })

  it("a connection dropped on every attempt is a NetworkError; onError is told", async () => {
    const { server } = ctx
    server.addRule({ match: () => true, reply: { dropConnection: true } })
    const seen: LLMErrorInfo[] = []
    const client = clientFor(style, server, {
      retries: 2,
      onError: (info) => {
        seen.push(info)
        return info.retryable ? "retry" : "fail"
      },
    })
    const error = await failure(() => client.run("hi"))
    expect(error).toBeInstanceOf(NetworkError)
    expect((error as NetworkError).code).toBe("TNX_NETWORK")
    expect(server.requests).toHaveLength(3)
    expect(seen.map((i) => [i.attempt, i.retryable, i.status])).toEqual([
      [1, true, undefined],
      [2, true, undefined],
      [3, true, undefined],
    ])
    expect(seen.every((i) => i.error instanceof NetworkError)).toBe(true)
  })

  it("an unreachable endpoint is a NetworkError after the retries", async () => {
    // Port 9 (discard) on localhost is closed in any sane test environment.
    const client = createClient({
      baseUrl: "http://127.0.0.1:9",
      style,
      model: "m",
      apiKey: KEY,
      retryBaseMs: 1,
    })
    const error = await failure(() => client.run("hi"))
    expect(error).toBeInstanceOf(NetworkError)
    expect(errorText(error)).not.toContain(KEY)
  })
})

describe.each(STYLES)("aborts and timeouts (%s)", (style) => {
  it("aborting mid-request rejects with AbortError, promptly, without a retry", async () => {
    const { server } = ctx
    const controller = new AbortController()
    server.addRule({
      match: () => true,
      reply: () => {
        // The request has arrived; the server will never answer it.
        setImmediate(() => controller.abort())
        return { hang: true }
      },
    })
    const error = await failure(() =>
      clientFor(style, server, { retries: 3 }).run("hi", { signal: controller.signal }),
    )
    expect(error).toBeInstanceOf(AbortError)
    expect((error as AbortError).code).toBe("TNX_ABORTED")
    expect(server.requests).toHaveLength(1)
    // The in-flight HTTP request itself was aborted, not just abandoned.
    await vi.waitFor(() => expect(server.inFlight).toBe(0))
  }, 3_000)

  it("an already aborted signal sends nothing", async () => {
    const { server } = ctx
    server.enqueue({ text: "never" })
    const error = await failure(() => clientFor(style, server).run("hi", { signal: AbortSignal.abort() }))
    expect(error).toBeInstanceOf(AbortError)
    expect(server.requests).toHaveLength(0)
  })

  it("aborting during the retry backoff stops at once", async () => {
    const { server } = ctx
    const controller = new AbortController()
    server.addRule({ match: () => true, reply: { status: 503, headers: { "retry-after": "60" } } })
    const client = clientFor(style, server, {
      onError: () => {
        setTimeout(() => controller.abort(), 5)
        return "retry"
      },
    })
    const error = await failure(() => client.run("hi", { signal: controller.signal }))
    expect(error).toBeInstanceOf(AbortError)
    expect(server.requests).toHaveLength(1)
  }, 3_000)

  it("timeoutMs aborts a hanging request with AbortError and is not retried", async () => {
    const { server } = ctx
    server.addRule({ match: () => true, reply: { hang: true } })
    const seen: LLMErrorInfo[] = []
    const client = clientFor(style, server, {
      timeoutMs: 300,
      retries: 3,
      onError: (info) => {
        seen.push(info)
        return "retry"
      },
    })
    const error = await failure(() => client.run("hi"))
    expect(error).toBeInstanceOf(AbortError)
    expect(error.message).toMatch(/timed out/)
    // One attempt at most (on a loaded machine the timeout may fire before it is recorded).
    expect(server.requests.length).toBeLessThanOrEqual(1)
    expect(seen).toEqual([])
    await vi.waitFor(() => expect(server.inFlight).toBe(0))
  }, 3_000)

  it("timeoutMs applies per attempt and does not break a fast request", async () => {
    const { server } = ctx
    server.enqueue({ status: 503, headers: { "retry-after": "0" } }, { text: "ok" })
    const result = await clientFor(style, server, { timeoutMs: 2_000 }).run("hi")
    expect(result.text).toBe("ok")
    expect(server.requests).toHaveLength(2)
  })
})

describe.each(STYLES)("malformed replies (%s)", (style) => {
  it("a 2xx body that is not JSON is an LLMResponseError, not retried", async () => {
    const { server } = ctx
    server.enqueue({ rawBody: "<html>gateway</html>" }, { text: "never" })
    const error = await failure(() => clientFor(style, server).run("hi"))
    expect(error).toBeInstanceOf(LLMResponseError)
    expect((error as LLMResponseError).code).toBe("TNX_LLM_RESPONSE")
    expect(error.message).toContain("<html>gateway</html>")
    expect(server.requests).toHaveLength(1)
  }, 3_000)

  it("a JSON reply without the style's payload is an LLMResponseError, not retried", async () => {
    const { server } = ctx
    const bodies = {
      openai: [{ id: "x", object: "chat.completion" }, { choices: [] }, { choices: [{ index: 0 }] }, []],
      anthropic: [{ id: "x", type: "message", role: "assistant" }, { content: "text" }, null, "str"],
      "openai-responses": [{ id: "x", object: "response" }, { output: "text" }, null, [1]],
    }[style]
    for (const body of bodies) {
      server.reset()
      server.enqueue({ rawBody: JSON.stringify(body) }, { text: "never" })
      const error = await failure(() => clientFor(style, server).run("hi"))
      expect(error, JSON.stringify(body)).toBeInstanceOf(LLMResponseError)
      expect(server.requests).toHaveLength(1)
    }
  }, 3_000)

  it("an empty 2xx body is an LLMResponseError", async () => {
    const { server } = ctx
    server.enqueue({ rawBody: "" })
    const error = await failure(() => clientFor(style, server).run("hi"))
    expect(error).toBeInstanceOf(LLMResponseError)
    expect(server.requests).toHaveLength(1)
  }, 3_000)
})

describe.each(STYLES)("secrets (%s)", (style) => {
  it("the API key never appears in an error, even when the endpoint echoes it", async () => {
    const { server } = ctx
    const errors: unknown[] = []
    const infos: LLMErrorInfo[] = []
    const run = async (reply: Parameters<typeof server.enqueue>[0], opts = {}) => {
      server.reset()
      server.addRule({ match: () => true, reply })
      const client = clientFor(style, server, {
        retries: 1,
        ...opts,
        onError: (info) => {
          infos.push(info)
          return "retry"
        },
      })
      errors.push(await failure(() => client.run("hi")))
    }
    await run({ status: 401, text: `Incorrect API key provided: ${KEY}` })
    await run({ status: 400, rawBody: `{"error":"bad key Bearer ${KEY}"}` })
    await run({ status: 500 })
    await run({ dropConnection: true })
    await run({ hang: true }, { timeoutMs: 20 })
    await run({ rawBody: "not json" })
    expect(errors).toHaveLength(6)
    for (const error of errors) {
      expect(error).toBeInstanceOf(ToolnexusError)
      expect(errorText(error)).not.toContain(KEY)
    }
    for (const info of infos) expect(errorText(info.error)).not.toContain(KEY)
  }, 5_000)
})

describe.each(STYLES)("the fetch option (%s)", (style) => {
  /** A fetch that counts its calls and forwards them to the global fetch. */
  function countingFetch() {
    const calls: string[] = []
    const fetchFn: typeof fetch = (input, init) => {
      calls.push(String(input))
      return fetch(input, init)
    }
    return { calls, fetchFn }
  }

  it("is the only transport: every request, retry and stream goes through it", async () => {
    const { server } = ctx
    const { calls, fetchFn } = countingFetch()
    server.enqueue({ status: 503, headers: { "retry-after": "0" } }, { text: "one" }, { text: "two" })
    const client = clientFor(style, server, { fetch: fetchFn })
    expect((await client.run("a")).text).toBe("one")
    const deltas: string[] = []
    const streamed = await client.ask("b", { onText: (d) => deltas.push(d) })
    expect(streamed.text).toBe("two")
    expect(deltas.join("")).toBe("two")
    expect(server.requests).toHaveLength(3)
    expect(server.requests[2]?.stream).toBe(true)
    expect(calls).toHaveLength(3)
    expect(new Set(calls)).toEqual(new Set([server.requests[0] && `${server.url}${server.requests[0].path}`]))
  })

  it("receives the method, headers and JSON body", async () => {
    const inits: RequestInit[] = []
    const fetchFn: typeof fetch = async (_input, init) => {
      inits.push(init ?? {})
      const body = {
        openai: { choices: [{ index: 0, message: { role: "assistant", content: "mocked" } }] },
        anthropic: {
          content: [{ type: "text", text: "mocked" }],
          usage: { input_tokens: 1, output_tokens: 2 },
        },
        "openai-responses": {
          status: "completed",
          output: [
            { type: "message", role: "assistant", content: [{ type: "output_text", text: "mocked" }] },
          ],
        },
      }[style]
      return new Response(JSON.stringify(body), {
        status: 200,
        headers: { "content-type": "application/json" },
      })
    }
    const client = createClient({
      baseUrl: "https://llm.invalid/v1",
      style,
      model: "m-x",
      apiKey: KEY,
      fetch: fetchFn,
    })
    const result = await client.run("hello")
    expect(result.text).toBe("mocked")
    expect(inits).toHaveLength(1)
    expect(inits[0]?.method).toBe("POST")
    const headers = new Headers(inits[0]?.headers)
    expect(headers.get(style !== "anthropic" ? "authorization" : "x-api-key")).toContain(KEY)
    const body = JSON.parse(String(inits[0]?.body))
    expect(body.model).toBe("m-x")
    expect(style === "openai-responses" ? body.input : body.messages).toEqual([
      { role: "user", content: "hello" },
    ])
  })

  it("maps a throwing fetch to NetworkError (retried) and an aborted one to AbortError", async () => {
    let count = 0
    const failing: typeof fetch = async () => {
      count++
      throw new TypeError("fetch failed")
    }
    const client = createClient({
      baseUrl: "https://llm.invalid",
      style,
      model: "m",
      fetch: failing,
      retryBaseMs: 1,
    })
    const error = await failure(() => client.run("hi"))
    expect(error).toBeInstanceOf(NetworkError)
    expect(count).toBe(3)

    const { server } = ctx
    const { calls, fetchFn } = countingFetch()
    const controller = new AbortController()
    server.addRule({
      match: () => true,
      reply: () => {
        setImmediate(() => controller.abort())
        return { hang: true }
      },
    })
    const aborted = await failure(() =>
      clientFor(style, server, { fetch: fetchFn }).run("hi", { signal: controller.signal }),
    )
    expect(aborted).toBeInstanceOf(AbortError)
    expect(calls).toHaveLength(1)
    await vi.waitFor(() => expect(server.inFlight).toBe(0))
  }, 3_000)
})

describe("createClient validation", () => {
  const base = { baseUrl: "http://127.0.0.1:1/v1", style: "openai" as const, model: "m" }

  it.each([
    ["a missing baseUrl", { baseUrl: undefined }],
    ["an empty baseUrl", { baseUrl: "" }],
    ["a baseUrl that is not http(s)", { baseUrl: "ftp://example.com" }],
    ["a baseUrl without a scheme", { baseUrl: "api.openai.com/v1" }],
    ["an unknown style", { style: "gemini" }],
    ["a missing style", { style: undefined }],
    ["an empty model", { model: "" }],
    ["a missing model", { model: undefined }],
    ["negative retries", { retries: -1 }],
    ["NaN retries", { retries: Number.NaN }],
    ["string retries", { retries: "3" }],
    ["infinite retries", { retries: Number.POSITIVE_INFINITY }],
    ["negative retryBaseMs", { retryBaseMs: -5 }],
    ["negative timeoutMs", { timeoutMs: -1 }],
    ["zero maxTurns", { maxTurns: 0 }],
  ])("refuses %s with ConfigError", (_label, patch) => {
    const opts = { ...base, ...patch } as never
    expect(() => createClient(opts)).toThrow(ConfigError)
    try {
      createClient(opts)
    } catch (error) {
      expect((error as ConfigError).code).toBe("TNX_CONFIG")
    }
  })

  it("refuses a missing options object", () => {
    expect(() => createClient(undefined as never)).toThrow(ConfigError)
  })

  it("accepts valid options without contacting the endpoint", () => {
    expect(() => createClient({ ...base, retries: 0, retryBaseMs: 0, timeoutMs: 1000 })).not.toThrow()
    expect(() =>
      createClient({ ...base, style: "anthropic", baseUrl: "https://api.anthropic.com", apiKey: "sk-ant-x" }),
    ).not.toThrow()
    expect(() =>
      createClient({ ...base, style: "openai-responses", baseUrl: "http://localhost:8080/v1" }),
    ).not.toThrow()
  })

  it("refuses a remote baseUrl without any key, naming the environment variable", () => {
    const saved = { ...process.env }
    for (const name of ["OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"]) delete process.env[name]
    try {
      for (const [style, env] of [
        ["openai", "OPENAI_API_KEY"],
        ["openai-responses", "OPENAI_API_KEY"],
        ["anthropic", "ANTHROPIC_API_KEY"],
      ] as const) {
        const remote = { baseUrl: "https://api.example.com/v1", style, model: "m" }
        expect(() => createClient(remote)).toThrow(ConfigError)
        expect(() => createClient(remote)).toThrow(env)
        // A credential header, an environment key or a loopback host are all fine.
        expect(() => createClient({ ...remote, headers: { Authorization: "Bearer x" } })).not.toThrow()
        process.env[env] = "sk-from-env"
        expect(() => createClient(remote)).not.toThrow()
        delete process.env[env]
        for (const host of ["127.0.0.1:9", "localhost:9", "[::1]:9"])
          expect(() => createClient({ ...remote, baseUrl: `http://${host}/v1` })).not.toThrow()
      }
    } finally {
      process.env = saved
    }
  })
})

describe("the default transport's endpoint URL", () => {
  // An approval host makes a client per run: the endpoint's URL is parsed once, not per client.
  it("is parsed once for many clients of one endpoint, and again for another", async () => {
    const Real = globalThis.URL
    const parsed: string[] = []
    class Counting extends Real {
      constructor(input: string | URL, base?: string | URL) {
        super(input, base)
        parsed.push(String(input))
      }
    }
    globalThis.URL = Counting as typeof URL
    try {
      const endpoint = `${ctx.server.url}/v1/chat/completions`
      for (let i = 0; i < 3; i++) {
        ctx.server.enqueue({ text: `reply ${i}` })
        expect((await clientFor("openai", ctx.server).run("hi")).text).toBe(`reply ${i}`)
      }
      expect(parsed.filter((url) => url === endpoint)).toHaveLength(1)
      ctx.server.enqueue({ text: "other" })
      const other = createClient({ baseUrl: ctx.server.url, style: "openai", model: "m", apiKey: KEY })
      expect((await other.run("hi")).text).toBe("other")
      ctx.server.enqueue({ text: "back" })
      expect((await clientFor("openai", ctx.server).run("hi")).text).toBe("back")
      expect(parsed.filter((url) => url === endpoint)).toHaveLength(2)
    } finally {
      globalThis.URL = Real
    }
  })
})
