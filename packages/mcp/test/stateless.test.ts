import { ConfigError, type Request, pendingOf } from "@toolnexus/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMcp } from "../src/index.js"
import { TEST_SERVER, UNDER_LOAD } from "./paths.js"
import { type StatelessServer, serveStateless } from "./stateless-server.js"

/** A server on the 1.x SDK: 2025-11-25 and older only. */
const older = { command: process.execPath, args: [TEST_SERVER, "stdio"] }
let served: StatelessServer
let stateless: { url: string }
beforeAll(async () => {
  served = await serveStateless()
  stateless = { url: served.url }
})
afterAll(async () => {
  await served?.close()
})

describe("protocol revisions", () => {
  it("by default connects both to a 2026-07-28 server and to one that only speaks 2025-11-25", async () => {
    const mcp = await connectMcp({ ...UNDER_LOAD, servers: { new: stateless, old: older } })
    try {
      expect(mcp.servers().map((s) => [s.name, s.status])).toEqual([
        ["new", "ready"],
        ["old", "ready"],
      ])
    } finally {
      await mcp.close()
    }
  })

  it("protocolVersions pins 2026-07-28: an older server fails to connect, a stateless one works", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { new: stateless, old: older },
      protocolVersions: ["2026-07-28"],
    })
    try {
      const [fresh, old] = mcp.servers()
      expect(fresh?.status).toBe("ready")
      expect(old).toMatchObject({ status: "failed", code: "TNX_MCP_CONNECT" })
      expect(old?.error).toMatch(/2026-07-28/)
    } finally {
      await mcp.close()
    }
  })

  it("protocolVersions of older revisions only never probes: the stateless server is met with initialize", async () => {
    const mcp = await connectMcp({
      ...UNDER_LOAD,
      servers: { new: stateless },
      protocolVersions: ["2025-11-25"],
    })
    try {
      expect(mcp.servers()[0]?.status).toBe("ready")
    } finally {
      await mcp.close()
    }
  })

  it("refuses a malformed protocolVersions before anything starts", async () => {
    await expect(connectMcp({ servers: {}, protocolVersions: ["latest"] })).rejects.toThrow(ConfigError)
    await expect(connectMcp({ servers: {}, protocolVersions: [] })).rejects.toThrow(/protocolVersions/)
  })
})

describe("a multi-round-trip elicitation on 2026-07-28", () => {
  const pinned = () => ({ ...UNDER_LOAD, servers: { shop: stateless }, protocolVersions: ["2026-07-28"] })

  it("is answered inline through ctx.resolve, and the retry carries the server's request state", async () => {
    const mcp = await connectMcp(pinned())
    try {
      const book = mcp.tools().find((t) => t.name === "shop__book")
      const asked: Request[] = []
      const result = await book?.execute(
        { guests: 2 },
        {
          resolve: async (req) => {
            asked.push(req)
            return { id: req.id, ok: true, data: { date: "2026-12-24" } }
          },
        },
      )
      expect(asked).toHaveLength(1)
      expect(asked[0]).toMatchObject({
        kind: "input",
        prompt: "Which date?",
        data: { server: "shop", tool: "book" },
      })
      expect(result).toMatchObject({ isError: false, output: "booked guests=2 on 2026-12-24" })
    } finally {
      await mcp.close()
    }
  })

  it("halts on the round when nobody can answer inline; the answer, in another connection, retries that round once", async () => {
    const mcp = await connectMcp(pinned())
    const calls = served.bookCalls
    const booked = served.booked
    let request: Request
    try {
      const book = mcp.tools().find((t) => t.name === "shop__book")
      const first = await book?.execute({ guests: 3 }, {})
      // Stored with the run as JSON: the round travels in the request's data, opaque.
      request = JSON.parse(JSON.stringify(first && pendingOf(first))) as Request
    } finally {
      await mcp.close()
    }
    expect(request).toMatchObject({
      kind: "input",
      prompt: "Which date?",
      data: { server: "shop", tool: "book", mcpRound: { requestState: "guests=3" } },
    })
    // The server was asked once and told nothing else: no cancel went back for the round.
    expect(served.bookCalls - calls).toBe(1)
    const again = await connectMcp(pinned())
    try {
      const book = again.tools().find((t) => t.name === "shop__book")
      const answer = { id: request.id, ok: true, data: { date: "2027-01-01" } }
      const resumed = await book?.execute({ guests: 3 }, { answer, request })
      expect(resumed).toMatchObject({ isError: false, output: "booked guests=3 on 2027-01-01" })
      // One retry of the round, with its request state: no fresh call, no second question.
      expect(served.bookCalls - calls).toBe(2)
      expect(served.booked - booked).toBe(1)
    } finally {
      await again.close()
    }
  })
})

describe("a round of a tool with an output schema", () => {
  it("is not taken for a result missing its structured content", async () => {
    const mcp = await connectMcp({ ...UNDER_LOAD, servers: { s: stateless } })
    try {
      const confirm = mcp.tools().find((t) => t.name === "s__confirm")
      const result = await confirm?.execute(
        {},
        { resolve: async (req) => ({ id: req.id, ok: true, data: { ok: true } }) },
      )
      expect(result).toMatchObject({ isError: false, output: '{"confirmed":true}' })
    } finally {
      await mcp.close()
    }
  })
})

describe("tool parameters as headers on 2026-07-28 (SEP-2243)", () => {
  it("mirrors a declared parameter into its Mcp-Param header, and leaves out a tool whose declaration is invalid", async () => {
    const mcp = await connectMcp({ ...UNDER_LOAD, servers: { w: stateless } })
    try {
      const names = mcp.tools().map((t) => t.name)
      expect(names).toContain("w__weather")
      expect(names).not.toContain("w__misdeclared")
      const weather = mcp.tools().find((t) => t.name === "w__weather")
      const before = served.regions.length
      expect(await weather?.execute({ region: "us-west1" })).toMatchObject({ output: "sunny in us-west1" })
      expect(served.regions.slice(before)).toEqual(["us-west1"])
    } finally {
      await mcp.close()
    }
  })
})
