import { IssuerMismatchError } from "@modelcontextprotocol/client"
import { describe, expect, it } from "vitest"
import { isOwnIssuerPath, negotiationOf } from "./server-connection.js"

describe("negotiationOf", () => {
  it("probes with server/discover and falls back to every older revision by default", () => {
    const chosen = negotiationOf(undefined, 10_000)
    expect(chosen.versionNegotiation).toEqual({ mode: "auto", probe: { timeoutMs: 5_000 } })
    expect(chosen.supportedProtocolVersions?.[0]).toBe("2026-07-28")
    expect(chosen.supportedProtocolVersions).toContain("2025-03-26")
  })

  it("pins when only stateless revisions are asked for, and never probes for older ones only", () => {
    expect(negotiationOf(["2026-07-28"], 10_000)).toEqual({
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    })
    expect(negotiationOf(["2025-11-25"], 10_000)).toEqual({
      versionNegotiation: { mode: "legacy" },
      supportedProtocolVersions: ["2025-11-25"],
    })
  })
})

describe("isOwnIssuerPath", () => {
  const server = new URL("http://localhost:3000/mcp")

  it("accepts a 2025-03-26 server naming itself with a path on its own origin", () => {
    const error = new IssuerMismatchError("metadata", "http://localhost:3000/", "http://localhost:3000/oauth")
    expect(isOwnIssuerPath(error, server)).toBe(true)
  })

  it("refuses any other mismatch: another origin, an authorization server the resource named, a callback's iss", () => {
    const elsewhere = new IssuerMismatchError("metadata", "http://localhost:3000/", "http://evil.example/")
    const named = new IssuerMismatchError("metadata", "http://auth.example/", "http://auth.example/other")
    const callback = new IssuerMismatchError(
      "authorization_response",
      "http://localhost:3000/",
      "http://localhost:3000/x",
    )
    for (const error of [elsewhere, named, callback]) expect(isOwnIssuerPath(error, server)).toBe(false)
    expect(isOwnIssuerPath(new Error("other"), server)).toBe(false)
  })
})
