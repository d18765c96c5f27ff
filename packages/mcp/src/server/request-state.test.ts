import { createDecipheriv } from "node:crypto"
import { ConfigError } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { RequestStateSealer, type SealedRunState } from "./request-state.js"

// Node's decipher, counted.
const deciphers = { count: 0 }
const countedDecipher = ((...args: Parameters<typeof createDecipheriv>) => {
  deciphers.count++
  return createDecipheriv(...args)
}) as typeof createDecipheriv

const STATE: SealedRunState = {
  tool: "deploy",
  runId: "mcp-1",
  requests: [{ id: "mcp-1.approve", kind: "approval" }],
  principal: "alice",
  expiresAt: 2_000,
}

describe("RequestStateSealer", () => {
  it("refuses no keys and keys under 32 bytes, naming the option", () => {
    expect(() => new RequestStateSealer([])).toThrow(ConfigError)
    expect(() => new RequestStateSealer(["short"])).toThrow(/stateKeys\[0\].*32 bytes/)
    expect(() => new RequestStateSealer([new Uint8Array(32), new Uint8Array(31)])).toThrow(/stateKeys\[1\]/)
  })

  it("opens what it sealed; a fresh IV each time; the first key seals, every key opens", () => {
    const now = () => 1_000
    const old = new RequestStateSealer(["o".repeat(32)], now)
    const rotated = new RequestStateSealer(["n".repeat(32), "o".repeat(32)], now)
    const wire = old.seal(STATE)
    expect(wire).not.toBe(old.seal(STATE))
    expect(rotated.open(wire, { principal: "alice" })).toEqual(STATE)
    expect(() => old.open(rotated.seal(STATE), { principal: "alice" })).toThrow(/sealed/)
  })

  it("no two seals share an IV, across the blocks IVs are cut from", () => {
    const sealer = new RequestStateSealer(["k".repeat(32)], () => 1_000)
    const ivs = new Set<string>()
    // 300 seals span three blocks of 128 IVs.
    for (let i = 0; i < 300; i++) {
      const wire = sealer.seal(STATE)
      ivs.add(Buffer.from(wire.slice(5), "base64url").subarray(0, 12).toString("hex"))
      expect(sealer.open(wire, { principal: "alice" })).toEqual(STATE)
    }
    expect(ivs.size).toBe(300)
  })

  it("refuses another principal, an expired state and malformed input with the reason", () => {
    let now = 1_000
    const sealer = new RequestStateSealer(["k".repeat(32)], () => now)
    const wire = sealer.seal(STATE)
    expect(() => sealer.open(wire, { principal: "mallory" })).toThrow(/principal/)
    for (const bad of ["", "tnx1.", "tnx.AAAA", `tnx1.${"A".repeat(40)}`])
      expect(() => sealer.open(bad, { principal: "alice" })).toThrow(/malformed|sealed/)
    now = 2_000
    expect(() => sealer.open(wire, { principal: "alice" })).toThrow(/expired/)
  })

  it("opens its own recent seal once without a decipher, with the same checks; anything else is deciphered", () => {
    let now = 1_000
    const sealer = new RequestStateSealer(["k".repeat(32)], () => now, countedDecipher)
    const other = new RequestStateSealer(["k".repeat(32)], () => now, countedDecipher)
    const wire = sealer.seal(STATE)
    deciphers.count = 0
    expect(sealer.open(wire, { principal: "alice" })).toEqual(STATE)
    expect(deciphers.count).toBe(0)
    // Taken at its first open: the same string again (a repeated retry) is deciphered.
    expect(sealer.open(wire, { principal: "alice" })).toEqual(STATE)
    expect(deciphers.count).toBe(1)
    // Another instance's seal under the same key (a retry reaching another server).
    expect(sealer.open(other.seal(STATE), { principal: "alice" })).toEqual(STATE)
    expect(deciphers.count).toBe(2)
    // A copy differing in one character is not the one issued: deciphered, and refused.
    const again = sealer.seal(STATE)
    const flipped = `${again.slice(0, -2)}${again.at(-2) === "A" ? "B" : "A"}${again.at(-1)}`
    expect(() => sealer.open(flipped, { principal: "alice" })).toThrow(/sealed|malformed/)
    expect(deciphers.count).toBe(3)
    // The principal and the expiry are checked on a remembered seal too.
    expect(() => sealer.open(sealer.seal(STATE), { principal: "mallory" })).toThrow(/principal/)
    const late = sealer.seal(STATE)
    now = 2_000
    expect(() => sealer.open(late, { principal: "alice" })).toThrow(/expired/)
    expect(deciphers.count).toBe(3)
  })

  it("remembers its last 512 seals only", () => {
    const sealer = new RequestStateSealer(["k".repeat(32)], () => 1_000, countedDecipher)
    const wires = Array.from({ length: 513 }, () => sealer.seal(STATE))
    deciphers.count = 0
    expect(sealer.open(wires[1] as string, { principal: "alice" })).toEqual(STATE)
    expect(deciphers.count).toBe(0)
    expect(sealer.open(wires[0] as string, { principal: "alice" })).toEqual(STATE)
    expect(deciphers.count).toBe(1)
  })
})
