import { describe, expect, it } from "vitest"
import type { Request, ToolResult } from "../types.js"
import { authRequired, isRequest, pending, pendingOf } from "./pending.js"
import { RELAY_KIND, isRelayRequest, relayAnswer, relayCallsOf, relayResultFor } from "./relay.js"

describe("pending", () => {
  it("suspends with a Request in metadata.pending, isError and the prompt as output", () => {
    const result = pending({ kind: "approval", prompt: "Pay 5 EUR?" })
    expect(result.isError).toBe(true)
    expect(result.output).toBe("Pay 5 EUR?")
    const request = result.metadata?.pending as Request
    expect(request).toEqual({ id: expect.stringMatching(/^pnd-/), kind: "approval", prompt: "Pay 5 EUR?" })
    // No optional key is present unless given: the wire stays byte-identical.
    expect(Object.keys(request).sort()).toEqual(["id", "kind", "prompt"])
  })

  it("fills unique ids over many calls", () => {
    const ids = new Set<string>()
    for (let i = 0; i < 10_000; i++) ids.add(pendingOf(pending({ kind: "input", prompt: "?" }))?.id ?? "")
    expect(ids.size).toBe(10_000)
    for (const id of ids) expect(id).toMatch(/^pnd-[A-Za-z0-9_-]{22}$/)
  })

  it("keeps a given id and the optional fields", () => {
    const result = pending({
      id: "pnd-mine",
      kind: "input",
      prompt: "Fill the form",
      url: "https://forms.example/f/1",
      data: { form: "f1" },
      expiresAt: "2030-01-01T00:00:00Z",
    })
    expect(result.metadata?.pending).toEqual({
      id: "pnd-mine",
      kind: "input",
      prompt: "Fill the form",
      url: "https://forms.example/f/1",
      data: { form: "f1" },
      expiresAt: "2030-01-01T00:00:00Z",
    })
  })

  it("puts the url on its own line of the output", () => {
    const result = pending({ kind: "input", prompt: "Fill the form", url: "https://forms.example/f/1" })
    expect(result.output).toBe("Fill the form\nhttps://forms.example/f/1")
    expect(result.output.split("\n")).toEqual(["Fill the form", "https://forms.example/f/1"])
  })

  it("survives a JSON round trip", () => {
    const result = pending({ kind: "approval", prompt: "ok?", url: "https://x.example", data: { n: 1 } })
    const copy = JSON.parse(JSON.stringify(result)) as ToolResult
    expect(copy).toEqual(result)
    expect(pendingOf(copy)).toEqual(pendingOf(result))
  })
})

describe("authRequired", () => {
  it("is an authorization request with the login url", () => {
    const result = authRequired("https://login.example/start?state=abc", "Sign in to read your mail")
    expect(result.metadata?.pending).toEqual({
      id: expect.stringMatching(/^pnd-/),
      kind: "authorization",
      prompt: "Sign in to read your mail",
      url: "https://login.example/start?state=abc",
    })
    expect(result.output).toBe("Sign in to read your mail\nhttps://login.example/start?state=abc")
    expect(result.isError).toBe(true)
  })

  it("has a default prompt and carries no data", () => {
    const request = pendingOf(authRequired("https://login.example"))
    expect(request?.prompt).toBe("Authorization required")
    expect(request?.data).toBeUndefined()
  })
})

describe("pendingOf and isRequest", () => {
  it("returns the request of a suspension", () => {
    const result = pending({ kind: "question", prompt: "Which one?" })
    expect(pendingOf(result)).toBe(result.metadata?.pending)
  })

  it.each([
    ["no metadata", { output: "x", isError: false }],
    ["metadata without pending", { output: "x", isError: true, metadata: { status: 500 } }],
    ["pending: true", { output: "x", isError: true, metadata: { pending: true } }],
    ["pending: a string", { output: "x", isError: true, metadata: { pending: "pnd-1" } }],
    ["pending: null", { output: "x", isError: true, metadata: { pending: null } }],
    ["pending without id", { output: "x", isError: true, metadata: { pending: { kind: "a", prompt: "p" } } }],
    ["pending without kind", { output: "x", isError: true, metadata: { pending: { id: "1", prompt: "p" } } }],
    ["pending without prompt", { output: "x", isError: true, metadata: { pending: { id: "1", kind: "a" } } }],
    [
      "pending with a numeric id",
      { output: "x", isError: true, metadata: { pending: { id: 1, kind: "a", prompt: "p" } } },
    ],
  ])("is undefined for %s", (_label, result) => {
    expect(pendingOf(result as ToolResult)).toBeUndefined()
  })

  it("isRequest checks the three required string keys", () => {
    expect(isRequest({ id: "1", kind: "approval", prompt: "p" })).toBe(true)
    expect(isRequest({ id: "1", kind: "approval", prompt: "p", url: "u", data: {} })).toBe(true)
    expect(isRequest({ id: "1", kind: "approval" })).toBe(false)
    expect(isRequest(null)).toBe(false)
    expect(isRequest("pnd-1")).toBe(false)
  })
})

describe("relay helpers", () => {
  const calls = [
    { id: "r1", name: "read_file", input: { path: "a" }, arguments: '{"path":"a"}' },
    { id: "r2", name: "list_dir", input: { dir: "/" }, arguments: '{"dir": "/"}' },
  ]
  const relayReq: Request = { id: "pnd-r", kind: RELAY_KIND, prompt: "execute 2 tool calls", data: { calls } }

  it("RELAY_KIND is tool_call and isRelayRequest checks the kind", () => {
    expect(RELAY_KIND).toBe("tool_call")
    expect(isRelayRequest(relayReq)).toBe(true)
    expect(isRelayRequest({ id: "x", kind: "approval", prompt: "p" })).toBe(false)
  })

  it("relayCallsOf returns the calls in order, and [] for anything else", () => {
    expect(relayCallsOf(relayReq)).toEqual(calls)
    expect(relayCallsOf({ id: "x", kind: "approval", prompt: "p", data: { calls } })).toEqual([])
    expect(relayCallsOf({ id: "x", kind: RELAY_KIND, prompt: "p" })).toEqual([])
    expect(relayCallsOf({ id: "x", kind: RELAY_KIND, prompt: "p", data: { calls: "nope" } })).toEqual([])
  })

  it("relayAnswer builds an ok answer echoing the id, isError defaulting to false", () => {
    const answer = relayAnswer("pnd-r", [
      { id: "r1", output: "contents of a" },
      { id: "r2", output: "ENOENT", isError: true },
    ])
    expect(answer).toEqual({
      id: "pnd-r",
      ok: true,
      data: {
        results: [
          { id: "r1", output: "contents of a", isError: false },
          { id: "r2", output: "ENOENT", isError: true },
        ],
      },
    })
    expect(JSON.parse(JSON.stringify(answer))).toEqual(answer)
  })

  it("relayResultFor reads data.results by id, or the single-call shorthand", () => {
    const answer = relayAnswer("pnd-r", [{ id: "r2", output: "two" }])
    expect(relayResultFor(answer, "r2", 2)).toEqual({ output: "two", isError: false })
    expect(relayResultFor(answer, "r1", 2)).toBeUndefined()
    const shorthand = { id: "pnd-r", ok: true, data: { output: "only", isError: true } }
    expect(relayResultFor(shorthand, "r1", 1)).toEqual({ output: "only", isError: true })
    // The shorthand is ambiguous with several calls and is not used then.
    expect(relayResultFor(shorthand, "r1", 2)).toBeUndefined()
  })
})
