import { describe, expect, it } from "vitest"
import { uiChunkJson } from "../src/ai-sdk/ui-chunk-json.js"
import type { UIMessageChunk } from "../src/ai-sdk/ui-message-chunk.js"

// The SSE frames must not change by a byte when chunks are serialised by template.
const awkward =
  'quote " backslash \\ newline \n tab \t nul \u0000 line-sep \u2028 emoji 😀 lone \ud800 <script>'

const chunks: UIMessageChunk[] = [
  { type: "start" },
  { type: "start", messageId: "msg-1" },
  { type: "start", messageId: awkward },
  { type: "start", messageId: "m", messageMetadata: { a: 1 } },
  { type: "start-step" },
  { type: "finish-step" },
  { type: "text-start", id: "text-1" },
  { type: "text-delta", id: "text-1", delta: awkward },
  { type: "text-delta", id: awkward, delta: "" },
  { type: "text-end", id: "text-1" },
  { type: "reasoning-start", id: "reasoning-2" },
  { type: "reasoning-delta", id: "reasoning-2", delta: awkward },
  { type: "reasoning-end", id: "reasoning-2" },
  { type: "finish" },
  { type: "finish", finishReason: "tool-calls" },
  { type: "finish", finishReason: "stop", messageMetadata: [1] },
  { type: "tool-input-available", toolCallId: "c1", toolName: "refund", input: { amount: 5, note: awkward } },
  { type: "tool-output-error", toolCallId: "c1", errorText: awkward },
  { type: "data-toolnexus-request", id: "r1", data: { kind: "input" } },
  { type: "error", errorText: awkward },
]

describe("uiChunkJson", () => {
  it.each(chunks.map((c) => [c.type, c] as const))("%s: the bytes of JSON.stringify", (_type, chunk) => {
    expect(uiChunkJson(chunk)).toBe(JSON.stringify(chunk))
  })
})
