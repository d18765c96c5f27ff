import { describe, expect, it } from "vitest"
import type { Message } from "../types.js"
import { lastAssistantText } from "./transcript-text.js"

describe("lastAssistantText", () => {
  it("reads an OpenAI transcript: the last assistant message's content, null content as empty", () => {
    const messages: Message[] = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "first" },
      { role: "user", content: "again" },
      { role: "assistant", content: "second" },
      { role: "tool", tool_call_id: "c1", content: "tool output" },
    ]
    expect(lastAssistantText(messages, "openai")).toBe("second")
    const calling: Message[] = [
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c", type: "function", function: { name: "t", arguments: "{}" } }],
      },
    ]
    expect(lastAssistantText(calling, "openai")).toBe("")
  })

  it("reads an Anthropic transcript: text blocks joined, tool_use blocks skipped", () => {
    const messages: Message[] = [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "paying " },
          { type: "tool_use", id: "t1", name: "pay", input: {} },
          { type: "text", text: "now" },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "paid" }] },
    ]
    expect(lastAssistantText(messages, "anthropic")).toBe("paying now")
    expect(lastAssistantText([{ role: "assistant", content: "plain" }], "anthropic")).toBe("plain")
  })

  it("gives an empty string when there is no assistant message", () => {
    expect(lastAssistantText([], "openai")).toBe("")
    expect(lastAssistantText([{ role: "user", content: "hi" }], "anthropic")).toBe("")
  })
})
