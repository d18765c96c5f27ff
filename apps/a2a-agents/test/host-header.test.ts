import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { openStore } from "@toolnexus/durable"
import { expect, it } from "vitest"
import { startTravelAgent } from "../src/travel-agent.js"

/** A GET with a chosen `Host` header (fetch cannot set one): the status and body. */
function getWithHost(url: string, path: string, host: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, headers: { host } }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        body += chunk
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on("error", reject)
    req.end()
  })
}

it("the travel agent answers a malformed Host with 400 and keeps serving (it crashed on new URL before)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tnx-a2a-host-"))
  const store = await openStore(`sqlite:${join(dir, "travel.db")}`)
  const agent = await startTravelAgent({ store, port: 0, onBooked: () => {} })
  try {
    for (const host of ["a b", "a@b", "h:99999"]) {
      const bad = await getWithHost(agent.url, "/.well-known/agent-card.json", host)
      expect([host, bad.status]).toEqual([host, 400])
      expect(JSON.parse(bad.body)).toMatchObject({ error: { code: "TNX_BAD_REQUEST" } })
    }
    const card = await getWithHost(agent.url, "/.well-known/agent-card.json", new URL(agent.url).host)
    expect(card.status).toBe(200)
    expect(JSON.parse(card.body)).toMatchObject({ name: "travel" })
  } finally {
    await agent.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
