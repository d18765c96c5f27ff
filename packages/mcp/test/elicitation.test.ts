import type { Answer, Request } from "@toolnexus/core"
import { createToolkit } from "@toolnexus/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type McpConnection, connectMcp } from "../src/index.js"
import { DATE_FORM, PROFILE_FORM, elicitingServer } from "./elicit-server.js"
import { type ServedMcp, serveMcp } from "./http-server.js"
import { answerHalted, scriptedClient } from "./scripted-model.js"

const log = { elicitations: 0, calls: 0 }
let served: ServedMcp
let mcp: McpConnection
let approving: McpConnection

beforeAll(async () => {
  served = await serveMcp(elicitingServer(log))
  mcp = await connectMcp({ servers: { shop: { url: served.url } } })
  approving = await connectMcp({ servers: { shop: { url: served.url } }, requireApproval: true })
})
afterAll(async () => {
  await mcp?.close()
  await approving?.close()
  await served?.close()
})

const book = [{ name: "shop__book", arguments: { guests: 2 } }]

function answering(reply: (req: Request) => Omit<Answer, "id">) {
  const asked: Request[] = []
  return {
    asked,
    waitFor: async (req: Request): Promise<Answer> => {
      asked.push(req)
      return { id: req.id, ...reply(req) }
    },
  }
}

describe("form elicitation answered inline through the chain's waitFor", () => {
  it("sends the validated answer back to the server as accept", async () => {
    const { asked, waitFor } = answering(() => ({ ok: true, data: { date: "2026-12-24" } }))
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const result = await scriptedClient(book, { waitFor }).run("book a table", { toolkit })
    expect(result.status).toBe("done")
    expect(result.text).toBe("final: booked 2 for 2026-12-24")
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      kind: "input",
      prompt: "Which date?",
      data: { server: "shop", tool: "book", schema: DATE_FORM, callId: "call_1" },
    })
  })

  it("declines or cancels on ok:false, by reason", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const declined = answering(() => ({ ok: false, reason: "declined" }))
    expect((await scriptedClient(book, declined).run("x", { toolkit })).text).toBe(
      "final: not booked: decline",
    )
    const cancelled = answering(() => ({ ok: false, reason: "cancelled" }))
    expect((await scriptedClient(book, cancelled).run("x", { toolkit })).text).toBe(
      "final: not booked: cancel",
    )
  })

  it("refuses data that does not fit the requested schema, naming the problem", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const wrong = answering(() => ({ ok: true, data: { date: 20261224 } }))
    const result = await scriptedClient(book, wrong).run("x", { toolkit })
    expect(result.toolCalls[0]?.isError).toBe(true)
    expect(result.toolCalls[0]?.output).toMatch(/does not fit the form: .*date/)
  })

  it("fills the fields an accepted answer omits with the schema's defaults", async () => {
    const { asked, waitFor } = answering(() => ({ ok: true, data: { email: "a@example.com", age: 41 } }))
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const result = await scriptedClient([{ name: "shop__profile", arguments: {} }], { waitFor }).run("x", {
      toolkit,
    })
    expect(asked[0]?.data).toMatchObject({ schema: PROFILE_FORM })
    const sent = JSON.parse(result.toolCalls[0]?.output.replace(/^accept: /, "") ?? "null")
    expect(sent).toEqual({
      email: "a@example.com",
      age: 41,
      name: "John Doe",
      score: 95.5,
      status: "active",
      verified: true,
    })
  })

  it("defaults do not stand in for a required field without one", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const empty = answering(() => ({ ok: true, data: {} }))
    const result = await scriptedClient([{ name: "shop__profile", arguments: {} }], empty).run("x", {
      toolkit,
    })
    expect(result.toolCalls[0]?.isError).toBe(true)
    expect(result.toolCalls[0]?.output).toMatch(/does not fit the form: .*email/)
  })

  it("URL mode becomes an authorization request with the url; ok accepts", async () => {
    const { asked, waitFor } = answering(() => ({ ok: true }))
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const result = await scriptedClient([{ name: "shop__sign", arguments: {} }], { waitFor }).run("x", {
      toolkit,
    })
    expect(result.text).toBe("final: url flow: accept")
    expect(asked[0]).toMatchObject({
      kind: "authorization",
      prompt: "Confirm your account",
      url: "https://example.test/confirm?x=1",
      data: { server: "shop", tool: "sign" },
    })
  })
})

describe("the call's time limit", () => {
  const LIMIT_MS = 2_000
  it("stops while a person answers, and ends a call that never answers", async () => {
    // The limit must exceed the booking's own working time with a wide margin: on a loaded CI
    // machine (two cores, every package's tests at once) 300 ms was not enough, and the booking
    // itself ran out. The stalled call still proves the limit ends a call nobody answers.
    const quick = await connectMcp({ servers: { shop: { url: served.url } }, callTimeoutMs: LIMIT_MS })
    try {
      const toolkit = await createToolkit({ extraTools: quick.tools() })
      const slow = answering(() => ({ ok: true, data: { date: "2027-06-07" } }))
      // The person answers only after a call started later has reached its limit, so the
      // booking's own limit would have ended it by then had its clock not stopped for the answer.
      let stalled: Awaited<ReturnType<typeof toolkit.execute>> | undefined
      const waitFor = async (req: Request) => {
        stalled = await toolkit.execute("shop__stall", {})
        return slow.waitFor(req)
      }
      expect((await scriptedClient(book, { waitFor }).run("x", { toolkit })).text).toBe(
        "final: booked 2 for 2027-06-07",
      )
      expect(stalled).toMatchObject({
        isError: true,
        output: `MCP server "shop": stall did not answer within ${LIMIT_MS} ms`,
      })
    } finally {
      await quick.close()
    }
  })
})

describe("form elicitation with nobody to answer", () => {
  it("cancels the call, halts, and the re-issued call is answered from the stored answer", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const client = scriptedClient(book)
    const before = log.elicitations
    const halted = await client.run("book a table", { toolkit })
    expect(halted.status).toBe("pending")
    expect(halted.pending).toMatchObject({
      kind: "input",
      prompt: "Which date?",
      data: { schema: DATE_FORM },
    })
    const request = JSON.parse(JSON.stringify(halted.pending)) as Request
    const resumed = await client.continueRun({
      toolkit,
      messages: JSON.parse(JSON.stringify(halted.messages)),
      pending: request,
      answer: { id: request.id, ok: true, data: { date: "2027-01-02" } },
    })
    expect(resumed.status).toBe("done")
    expect(resumed.text).toBe("final: booked 2 for 2027-01-02")
    // The server asked twice (the first call was cancelled); the user was asked once.
    expect(log.elicitations - before).toBe(2)
  })

  it("a stored answer gets the schema's defaults too", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const client = scriptedClient([{ name: "shop__profile", arguments: {} }])
    const halted = await client.run("profile", { toolkit })
    expect(halted.pending?.prompt).toBe("Your profile?")
    const resumed = await answerHalted(client, toolkit, halted, { email: "b@example.com", verified: false })
    expect(resumed.status).toBe("done")
    const sent = JSON.parse(resumed.toolCalls.at(-1)?.output.replace(/^accept: /, "") ?? "null")
    expect(sent).toEqual({
      email: "b@example.com",
      verified: false,
      name: "John Doe",
      age: 30,
      score: 95.5,
      status: "active",
    })
  })

  it("a call that elicits twice halts twice; the last re-issue replays both answers", async () => {
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const client = scriptedClient([{ name: "shop__plan", arguments: {} }])
    const first = await client.run("plan", { toolkit })
    expect(first.pending?.prompt).toBe("Which date?")
    const second = await answerHalted(client, toolkit, first, { date: "2027-04-01" })
    expect(second.pending?.prompt).toBe("What time?")
    const third = await answerHalted(client, toolkit, second, { time: "19:30" })
    expect(third.text).toBe("final: planned 2027-04-01 at 19:30")
  })

  it("after an approval, the elicitation is a fresh suspension and the approval is not asked again", async () => {
    const toolkit = await createToolkit({ extraTools: approving.tools() })
    const client = scriptedClient(book)
    const first = await client.run("book", { toolkit })
    expect(first.pending).toMatchObject({
      kind: "approval",
      data: { server: "shop", tool: "book", args: { guests: 2 }, annotations: {} },
    })
    const calls = log.calls
    const second = await answerHalted(client, toolkit, first)
    expect(second.status).toBe("pending")
    expect(second.pending?.kind).toBe("input")
    const third = await answerHalted(client, toolkit, second, { date: "2027-02-03" })
    expect(third.status).toBe("done")
    expect(third.text).toBe("final: booked 2 for 2027-02-03")
    expect(log.calls - calls).toBe(2)
  })

  it("a declined approval never calls the server", async () => {
    const toolkit = await createToolkit({ extraTools: approving.tools() })
    const calls = log.calls
    const result = await scriptedClient(book, {
      waitFor: async (req) => ({ id: req.id, ok: false, reason: "declined" }),
    }).run("book", { toolkit })
    expect(result.toolCalls[0]?.output).toMatch(/^declined: Allow MCP server "shop" to run book/)
    expect(log.calls).toBe(calls)
  })
})
