import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { createCredentialedFetch } from "./outbound-credentials.js"

interface Seen {
  method: string
  path: string
  headers: IncomingMessage["headers"]
  body: string
}

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
})

/** A recording server on its own port of 127.0.0.1: its own origin. */
async function origin(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      seen.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body })
      handle(req, res)
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

const ok = (_req: IncomingMessage, res: ServerResponse) => res.writeHead(200).end("ok")
const KEY = { "x-api-key": "k-123456" }

describe("createCredentialedFetch", () => {
  it("adds the credentials on their origin, not on another, even when the caller copied them in", async () => {
    const home = await origin(ok)
    const away = await origin(ok)
    const send = createCredentialedFetch({ origin: home.url, headers: () => KEY })
    await send(`${home.url}/a`)
    await send(`${away.url}/b`, { headers: { ...KEY, accept: "text/plain" } })
    expect(home.seen[0]?.headers["x-api-key"]).toBe("k-123456")
    expect(away.seen[0]?.headers["x-api-key"]).toBeUndefined()
    expect(away.seen[0]?.headers.accept).toBe("text/plain")
  })

  it("a cross-origin 302 is followed without them; a 307 resends the POST body without them", async () => {
    const away = await origin(ok)
    const home = await origin((req, res) =>
      res.writeHead(req.url === "/post" ? 307 : 302, { location: `${away.url}/landed` }).end(),
    )
    const send = createCredentialedFetch({ origin: home.url, headers: KEY })
    const reply = await send(`${home.url}/get`, { headers: { authorization: "Bearer oauth-7788" } })
    expect(await reply.text()).toBe("ok")
    await send(`${home.url}/post`, {
      method: "POST",
      body: '{"a":1}',
      headers: { "content-type": "application/json" },
    })
    expect(home.seen.map((s) => s.headers["x-api-key"])).toEqual(["k-123456", "k-123456"])
    expect(away.seen.map((s) => [s.method, s.body, s.headers["content-type"]])).toEqual([
      ["GET", "", undefined],
      ["POST", '{"a":1}', "application/json"],
    ])
    for (const s of away.seen) {
      expect(s.headers["x-api-key"]).toBeUndefined()
      expect(s.headers.authorization).toBeUndefined()
    }
  })

  it("a same-origin redirect keeps them; allowOrigins admits another origin", async () => {
    const partner = await origin(ok)
    const home = await origin((req, res) => {
      if (req.url === "/old") res.writeHead(301, { location: "/new" }).end()
      else if (req.url === "/new") res.writeHead(302, { location: `${partner.url}/p` }).end()
      else ok(req, res)
    })
    const send = createCredentialedFetch({ origin: home.url, headers: KEY, allowOrigins: [partner.url] })
    expect((await send(`${home.url}/old`)).status).toBe(200)
    expect(home.seen.map((s) => [s.path, s.headers["x-api-key"]])).toEqual([
      ["/old", "k-123456"],
      ["/new", "k-123456"],
    ])
    expect(partner.seen[0]?.headers["x-api-key"]).toBe("k-123456")
  })

  it('crossOriginRedirect "refuse" rejects with a NetworkError; a loop stops after maxRedirects', async () => {
    const away = await origin(ok)
    const home = await origin((req, res) =>
      res.writeHead(302, { location: req.url === "/loop" ? "/loop" : `${away.url}/x` }).end(),
    )
    const refusing = createCredentialedFetch({
      origin: home.url,
      headers: KEY,
      crossOriginRedirect: "refuse",
    })
    await expect(refusing(`${home.url}/out`)).rejects.toMatchObject({
      code: "TNX_NETWORK",
      message: expect.stringContaining("credentials stay with their origin"),
    })
    expect(away.seen).toHaveLength(0)
    const send = createCredentialedFetch({ origin: home.url, headers: KEY, maxRedirects: 2 })
    await expect(send(`${home.url}/loop`)).rejects.toMatchObject({ code: "TNX_NETWORK" })
    expect(home.seen.filter((s) => s.path === "/loop")).toHaveLength(3)
  })

  it('a caller\'s redirect: "manual" gets the redirect itself', async () => {
    const home = await origin((_req, res) => res.writeHead(302, { location: "/elsewhere" }).end())
    const send = createCredentialedFetch({ origin: home.url, headers: KEY })
    const reply = await send(home.url, { redirect: "manual" })
    expect(reply.status).toBe(302)
    expect(home.seen).toHaveLength(1)
  })
})
