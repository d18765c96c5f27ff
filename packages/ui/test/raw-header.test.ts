import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { connect } from "node:net"
import { expect, it } from "vitest"
import { rawHeader } from "../src/internal/raw-header.js"

/** What Node's parser gives for one raw request: `req.headers[name]` beside `rawHeader` of its raw headers. */
async function bothReadings(head: string, names: string[]) {
  const server = createServer((req, res) => {
    const pairs = names.map((name) => {
      const value = req.headers[name]
      return [Array.isArray(value) ? value.join(", ") : value, rawHeader(req.rawHeaders, name)]
    })
    res.end(JSON.stringify(pairs))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const socket = connect(port, "127.0.0.1")
  let reply = ""
  socket.setEncoding("utf8")
  socket.on("data", (d: string) => {
    reply += d
  })
  socket.write(`${head}\r\nconnection: close\r\n\r\n`)
  await new Promise((resolve) => socket.on("close", resolve))
  server.close()
  return JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4)) as [unknown, unknown][]
}

it("rawHeader reads a header as req.headers does: any case, the first of a repeated host or content type, others joined", async () => {
  const names = ["host", "content-type", "origin", "accept", "cookie", "set-cookie", "x-absent", "user-agent"]
  const pairs = await bothReadings(
    [
      "POST / HTTP/1.1",
      "Host: a.example:81",
      "HOST: b.example",
      "Content-Type: application/json",
      "content-type: text/plain",
      "Origin: https://a.example",
      "origin: https://b.example",
      "Accept: text/html",
      "ACCEPT: application/json",
      "Cookie: a=1",
      "cookie: b=2",
      "Set-Cookie: c=3",
      "set-cookie: d=4",
      "User-Agent: one",
      "user-agent: two",
    ].join("\r\n"),
    names,
  )
  for (const [i, [fromNode, fromRaw]] of pairs.entries())
    expect([names[i], fromRaw]).toEqual([names[i], fromNode])
  expect(pairs[0]).toEqual(["a.example:81", "a.example:81"])
  expect(pairs[2]?.[1]).toBe("https://a.example, https://b.example")
})
