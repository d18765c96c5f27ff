import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { ConfigError } from "../errors.js"
import type { ToolResult } from "../types.js"
import { type HttpToolOptions, httpTool } from "./http-tool.js"

/** One request as the test server saw it. */
interface Seen {
  method: string
  path: string
  query: URLSearchParams
  headers: IncomingMessage["headers"]
  body: string
}

const SECRET = "tnx-s3cr3t-Value-4242"
const ENV = "TNX_HTTP_TOOL_TEST_TOKEN"
const MISSING_ENV = "TNX_HTTP_TOOL_TEST_UNSET"

let server: Server
let base: string
let seen: Seen[] = []
// Resolved when a request reaches /hang, and when that request's connection closes.
let hangArrived: () => void = () => {}
let hangClosed: () => void = () => {}

function handle(req: IncomingMessage, res: ServerResponse, body: string): void {
  const url = new URL(req.url ?? "/", "http://localhost")
  seen.push({
    method: req.method ?? "",
    path: url.pathname,
    query: url.searchParams,
    headers: req.headers,
    body,
  })
  const route = url.pathname.split("/")[1]
  if (route === "hang") {
    // Never answer; report when the client gives up and the socket goes away.
    res.on("close", () => hangClosed())
    hangArrived()
    return
  }
  if (route === "status") {
    const code = Number(url.pathname.split("/")[2])
    res.writeHead(code, { "content-type": "text/plain" }).end(`status body ${code}`)
    return
  }
  if (route === "json") {
    res.writeHead(200, { "content-type": "application/json" }).end('{ "a": 1,\n  "b": [true, null, "x"] }')
    return
  }
  if (route === "not-json") {
    res.writeHead(200, { "content-type": "text/plain" }).end("this is { not json")
    return
  }
  if (route === "redirect") {
    // 302 to the `to` query parameter (another origin, or a path of this one).
    res.writeHead(302, { location: url.searchParams.get("to") ?? "/" }).end()
    return
  }
  if (route === "echo-headers") {
    // A server that reflects what it received, to prove secrets are scrubbed from outputs.
    res.writeHead(url.searchParams.get("fail") ? 500 : 200).end(JSON.stringify(req.headers))
    return
  }
  res.writeHead(200, { "content-type": "text/plain" }).end("ok")
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

beforeEach(() => {
  seen = []
  process.env[ENV] = SECRET
  delete process.env[MISSING_ENV]
})

afterEach(() => {
  delete process.env[ENV]
})

const schema = { type: "object" }

function tool(opts: Partial<HttpToolOptions> & Pick<HttpToolOptions, "method" | "url">) {
  return httpTool({ name: "t", description: "test tool", inputSchema: schema, ...opts })
}

function last(): Seen {
  const s = seen.at(-1)
  if (!s) throw new Error("the server saw no request")
  return s
}

function expectNoSecret(result: ToolResult): void {
  expect(JSON.stringify(result)).not.toContain(SECRET)
}

describe("httpTool construction", () => {
  it("builds a tool with source http", () => {
    const t = tool({ method: "GET", url: `${base}/x` })
    expect(t).toMatchObject({ name: "t", description: "test tool", inputSchema: schema, source: "http" })
  })

  it("refuses an invalid name", () => {
    expect(() =>
      httpTool({ name: "bad name", description: "", method: "GET", url: base, inputSchema: schema }),
    ).toThrow(ConfigError)
  })

  it.each([
    ["method", { method: "HEAD" }],
    ["method", { method: "get" }],
    ["url", { url: "not a url" }],
    ["url", { url: "/relative/{id}" }],
    ["url", { url: "ftp://example.com/{id}" }],
    ["url", { url: 42 }],
    ["body", { body: "xml" }],
    ["timeoutMs", { timeoutMs: 0 }],
    ["timeoutMs", { timeoutMs: -5 }],
    ["timeoutMs", { timeoutMs: Number.NaN }],
    ["timeoutMs", { timeoutMs: Number.POSITIVE_INFINITY }],
    ["timeoutMs", { timeoutMs: "100" }],
    ["resultMode", { resultMode: "xml" }],
    ["query", { query: "q" }],
    ["headers", { headers: { "x-a": 1 } }],
    ["headers", { headers: { "bad header": "v" } }],
    ["inputSchema", { inputSchema: null }],
  ])("refuses an invalid %s option", (option, patch) => {
    const opts = {
      name: "t",
      description: "d",
      method: "GET",
      url: `${base}/x`,
      inputSchema: schema,
      ...patch,
    }
    let thrown: unknown
    try {
      httpTool(opts as unknown as HttpToolOptions)
    } catch (err) {
      thrown = err
    }
    expect(thrown).toBeInstanceOf(ConfigError)
    expect((thrown as Error).message).toContain(`"${option}"`)
  })

  it("does not quote a header value in a construction error", () => {
    expect(() => tool({ method: "GET", url: base, headers: { "bad header": SECRET } })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(SECRET) }),
    )
  })
})

describe("httpTool requests", () => {
  it("fills URL placeholders, URL-encoded, and removes them from the body", async () => {
    const t = tool({ method: "POST", url: `${base}/items/{id}/parts/{part}` })
    const r = await t.execute({ id: "a b/c?d", part: 7, note: "hi" })
    expect(r).toEqual({ output: "ok", isError: false, metadata: { status: 200 } })
    expect(last().path).toBe("/items/a%20b%2Fc%3Fd/parts/7")
    expect(JSON.parse(last().body)).toEqual({ note: "hi" })
    expect(last().headers["content-type"]).toBe("application/json")
  })

  it("returns an error naming a placeholder with no arg, without sending", async () => {
    const t = tool({ method: "GET", url: `${base}/items/{id}` })
    const r = await t.execute({ other: 1 })
    expect(r.isError).toBe(true)
    expect(r.output).toContain("{id}")
    expect(seen).toHaveLength(0)
  })

  it("sends the query list, repeating array keys and skipping absent args", async () => {
    const t = tool({ method: "POST", url: `${base}/search?fixed=1`, query: ["q", "tag", "page", "absent"] })
    await t.execute({ q: "a&b=c", tag: ["x", "y"], page: 2, rest: true })
    const s = last()
    expect(s.query.get("fixed")).toBe("1")
    expect(s.query.get("q")).toBe("a&b=c")
    expect(s.query.getAll("tag")).toEqual(["x", "y"])
    expect(s.query.get("page")).toBe("2")
    expect(s.query.has("absent")).toBe(false)
    expect(s.query.has("rest")).toBe(false)
    expect(JSON.parse(s.body)).toEqual({ rest: true })
  })

  it("sends the remaining args of a GET in the query string, with no body", async () => {
    const t = tool({ method: "GET", url: `${base}/users/{id}`, query: ["fields"] })
    await t.execute({ id: 5, fields: ["a", "b"], limit: 10, filter: { x: 1 } })
    const s = last()
    expect(s.method).toBe("GET")
    expect(s.path).toBe("/users/5")
    expect(s.query.getAll("fields")).toEqual(["a", "b"])
    expect(s.query.get("limit")).toBe("10")
    expect(s.query.get("filter")).toBe('{"x":1}')
    expect(s.query.has("id")).toBe(false)
    expect(s.body).toBe("")
  })

  it("sends the remaining args of a DELETE in the query string", async () => {
    const t = tool({ method: "DELETE", url: `${base}/users/{id}` })
    await t.execute({ id: 5, hard: true })
    expect(last()).toMatchObject({ method: "DELETE", path: "/users/5", body: "" })
    expect(last().query.get("hard")).toBe("true")
  })

  it("sends a JSON body by default", async () => {
    const t = tool({ method: "PUT", url: `${base}/x` })
    await t.execute({ a: 1, b: { c: [1, 2] }, d: null })
    expect(last().method).toBe("PUT")
    expect(last().headers["content-type"]).toBe("application/json")
    expect(JSON.parse(last().body)).toEqual({ a: 1, b: { c: [1, 2] }, d: null })
  })

  it("sends a form body", async () => {
    const t = tool({ method: "PATCH", url: `${base}/x`, body: "form" })
    await t.execute({ name: "a b&c", tags: ["1", "2"], n: 3 })
    const s = last()
    expect(s.method).toBe("PATCH")
    expect(s.headers["content-type"]).toBe("application/x-www-form-urlencoded")
    const form = new URLSearchParams(s.body)
    expect(form.get("name")).toBe("a b&c")
    expect(form.getAll("tags")).toEqual(["1", "2"])
    expect(form.get("n")).toBe("3")
  })

  it("sends a raw body as text/plain", async () => {
    const t = tool({ method: "POST", url: `${base}/x`, body: "raw" })
    await t.execute({ body: "line 1\nline 2" })
    expect(last().headers["content-type"]).toBe("text/plain")
    expect(last().body).toBe("line 1\nline 2")
  })

  it("keeps a content-type set by the headers option for a raw body", async () => {
    const t = tool({ method: "POST", url: `${base}/x`, body: "raw", headers: { "Content-Type": "text/csv" } })
    await t.execute({ body: "a,b\n1,2" })
    expect(last().headers["content-type"]).toBe("text/csv")
    expect(last().body).toBe("a,b\n1,2")
  })

  it("resolves env references in header values at call time", async () => {
    const t = tool({
      method: "GET",
      url: `${base}/x`,
      headers: { authorization: `Bearer \${${ENV}}`, "x-fixed": "plain" },
    })
    process.env[ENV] = SECRET
    const r = await t.execute({})
    expect(last().headers.authorization).toBe(`Bearer ${SECRET}`)
    expect(last().headers["x-fixed"]).toBe("plain")
    expectNoSecret(r)
  })

  it("returns an error naming a missing variable and its header, without sending", async () => {
    const t = tool({ method: "GET", url: `${base}/x`, headers: { "x-api-key": `\${${MISSING_ENV}}` } })
    const r = await t.execute({})
    expect(r.isError).toBe(true)
    expect(r.output).toContain(MISSING_ENV)
    expect(r.output).toContain("x-api-key")
    expect(seen).toHaveLength(0)
  })

  it("never puts a resolved env value in any output, success or error", async () => {
    const headers = { authorization: `Bearer \${${ENV}}` }
    const results: ToolResult[] = []
    // A server that echoes nothing, one that fails, and ones that reflect the header back.
    results.push(await tool({ method: "GET", url: `${base}/x`, headers }).execute({}))
    results.push(await tool({ method: "GET", url: `${base}/status/500`, headers }).execute({}))
    results.push(await tool({ method: "GET", url: `${base}/echo-headers`, headers }).execute({}))
    results.push(await tool({ method: "GET", url: `${base}/echo-headers?fail=1`, headers }).execute({}))
    results.push(
      await tool({ method: "GET", url: `${base}/echo-headers`, headers, resultMode: "json" }).execute({}),
    )
    results.push(await tool({ method: "GET", url: `${base}/hang`, headers, timeoutMs: 50 }).execute({}))
    results.push(await tool({ method: "GET", url: await refusedUrl(), headers }).execute({}))
    expect(seen.every((s) => s.headers.authorization === `Bearer ${SECRET}`)).toBe(true)
    expect(results.map((r) => r.isError)).toEqual([false, true, false, true, false, true, true])
    for (const r of results) expectNoSecret(r)
    expect(results[2]!.output).toContain("[redacted]")
  })

  it("returns non-2xx statuses as errors with the body", async () => {
    const r = await tool({ method: "GET", url: `${base}/status/404` }).execute({})
    expect(r).toEqual({ output: "HTTP 404: status body 404", isError: true, metadata: { status: 404 } })
    const r2 = await tool({ method: "POST", url: `${base}/status/503`, resultMode: "json" }).execute({})
    expect(r2).toEqual({ output: "HTTP 503: status body 503", isError: true, metadata: { status: 503 } })
  })

  it("returns 2xx statuses other than 200 as success", async () => {
    const r = await tool({ method: "POST", url: `${base}/status/201` }).execute({})
    expect(r).toEqual({ output: "status body 201", isError: false, metadata: { status: 201 } })
  })

  it("re-serialises a JSON result compactly", async () => {
    const r = await tool({ method: "GET", url: `${base}/json`, resultMode: "json" }).execute({})
    expect(r).toEqual({ output: '{"a":1,"b":[true,null,"x"]}', isError: false, metadata: { status: 200 } })
  })

  it("returns the body text unchanged in text mode", async () => {
    const r = await tool({ method: "GET", url: `${base}/json` }).execute({})
    expect(r.output).toBe('{ "a": 1,\n  "b": [true, null, "x"] }')
  })

  it("returns an error when a JSON result does not parse", async () => {
    const r = await tool({ method: "GET", url: `${base}/not-json`, resultMode: "json" }).execute({})
    expect(r.isError).toBe(true)
    expect(r.output).toMatch(/not valid JSON/)
    expect(r.metadata).toEqual({ status: 200 })
  })

  it("aborts a request that outlives timeoutMs", async () => {
    const closed = new Promise<void>((resolve) => {
      hangClosed = resolve
    })
    // Long enough for the request to reach the server even on a loaded machine.
    const r = await tool({ method: "GET", url: `${base}/hang`, timeoutMs: 300 }).execute({})
    expect(r).toEqual({ output: "timed out after 300 ms", isError: true })
    // The server sees the connection dropped: the request was aborted, not merely abandoned.
    await closed
  })

  it("aborts the request when ctx.signal aborts", async () => {
    const arrived = new Promise<void>((resolve) => {
      hangArrived = resolve
    })
    const closed = new Promise<void>((resolve) => {
      hangClosed = resolve
    })
    const controller = new AbortController()
    const pending = tool({ method: "GET", url: `${base}/hang` }).execute({}, { signal: controller.signal })
    await arrived
    controller.abort()
    expect(await pending).toEqual({ output: "aborted", isError: true })
    await closed
  })

  it("does not send when ctx.signal is already aborted", async () => {
    const r = await tool({ method: "GET", url: `${base}/x` }).execute({}, { signal: AbortSignal.abort() })
    expect(r).toEqual({ output: "aborted", isError: true })
    expect(seen).toHaveLength(0)
  })

  it("returns a network error as an error result", async () => {
    const r = await tool({ method: "POST", url: await refusedUrl() }).execute({ a: 1 })
    expect(r.isError).toBe(true)
    expect(r.output).toMatch(/ECONNREFUSED/)
  })

  it("issue 33: a redirect keeps the headers on this origin and drops them for another", async () => {
    const away: IncomingMessage["headers"][] = []
    const other = createServer((req, res) => {
      away.push(req.headers)
      res.writeHead(200).end("landed elsewhere")
    })
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve))
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/landing`
    try {
      const headers = { "x-api-key": `\${${ENV}}`, authorization: `Bearer \${${ENV}}` }
      const same = await tool({ method: "GET", url: `${base}/redirect?to=/json`, headers }).execute({})
      expect(same).toMatchObject({ isError: false, metadata: { status: 200 } })
      expect(seen.map((s) => [s.path, s.headers["x-api-key"]])).toEqual([
        ["/redirect", SECRET],
        ["/json", SECRET],
      ])
      const to = encodeURIComponent(otherUrl)
      const cross = await tool({ method: "GET", url: `${base}/redirect?to=${to}`, headers }).execute({})
      expect(cross).toMatchObject({ output: "landed elsewhere", isError: false })
      expect(away).toHaveLength(1)
      expect(away[0]?.["x-api-key"]).toBeUndefined()
      expect(away[0]?.authorization).toBeUndefined()
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()))
    }
  })

  it("treats non-object args as no args instead of throwing", async () => {
    const t = tool({ method: "POST", url: `${base}/x` })
    const r = await t.execute(null as unknown as Record<string, unknown>)
    expect(r.isError).toBe(false)
    expect(last().body).toBe("{}")
  })
})

/** A URL on a port that was just free: nothing listens there. */
async function refusedUrl(): Promise<string> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))
  const { port } = s.address() as AddressInfo
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return `http://127.0.0.1:${port}/x`
}
