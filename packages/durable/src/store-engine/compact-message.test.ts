import type { Message } from "@toolnexus/core"
import { describe, expect, it } from "vitest"
import { CorruptDataError } from "../errors.js"
import { packMessage } from "./compact-message.js"
import { decodeMessage, encodeMessages } from "./message-codec.js"

const call = (id: string, name: string, args: string) => ({
  id,
  type: "function" as const,
  function: { name, arguments: args },
})
const roundTrip = (message: unknown) => {
  const [body] = encodeMessages("c", [message as Message])
  return { body: body as string, back: decodeMessage("c", 0, body) }
}

describe("compact message bodies", () => {
  it.each([
    [{ role: "user", content: "go" }, '["u","go"]'],
    [{ role: "system", content: "be brief" }, '["s","be brief"]'],
    [{ role: "assistant", content: "done" }, '["a","done"]'],
    [{ role: "assistant", content: null }, '["a",null]'],
    [
      {
        role: "assistant",
        content: null,
        tool_calls: [call("c1", "lookup", "{}"), call("c2", "pay", '{"n":1}')],
      },
      '["a",null,"c1","lookup","{}","c2","pay","{\\"n\\":1}"]',
    ],
    [{ role: "tool", tool_call_id: "c1", content: "data" }, '["t","c1","data"]'],
  ])("packs %j and reads it back equal", (message, body) => {
    expect(roundTrip(message)).toEqual({ body, back: message })
  })

  it.each([
    ["an extra key", { role: "user", content: "go", name: "ann" }],
    ["content parts", { role: "user", content: [{ type: "text", text: "go" }] }],
    ["a refusal", { role: "assistant", content: null, refusal: "no" }],
    ["no tool calls in the list", { role: "assistant", content: null, tool_calls: [] }],
    [
      "a call with an extra key",
      { role: "assistant", content: null, tool_calls: [{ ...call("c", "t", "{}"), x: 1 }] },
    ],
    [
      "a call that is not a function",
      { role: "assistant", content: null, tool_calls: [{ ...call("c", "t", "{}"), type: "x" }] },
    ],
    [
      "Anthropic blocks",
      { role: "assistant", content: [{ type: "tool_use", id: "t", name: "n", input: {} }] },
    ],
    ["a Responses item", { type: "function_call", call_id: "c", name: "n", arguments: "{}" }],
    ["a tool result that is not text", { role: "tool", tool_call_id: "c", content: 1 }],
  ])("stores a message with %s as its JSON object", (_what, message) => {
    expect(packMessage(message as unknown as Message)).toBeUndefined()
    expect(roundTrip(message)).toEqual({ body: JSON.stringify(message), back: message })
  })

  it("reads a body an older version wrote as a JSON object", () => {
    expect(decodeMessage("c", 0, '{"role":"tool","tool_call_id":"c1","content":"data"}')).toEqual({
      role: "tool",
      tool_call_id: "c1",
      content: "data",
    })
  })

  it.each([['["x","go"]'], ['["u"]'], ['["u",1]'], ['["a",null,"c1","lookup"]'], ['["t","c1"]'], ["[]"]])(
    "refuses the malformed compact body %s as corrupt data naming the message",
    (body) => {
      expect(() => decodeMessage("conv", 4, body)).toThrow(CorruptDataError)
      expect(() => decodeMessage("conv", 4, body)).toThrow(/message 4 is not a compact message/)
    },
  )
})
