import { describe, expect, it } from "vitest"
import { createClient } from "../src/client/create-client.js"
import type { StreamEvent } from "../src/client/run-result.js"

/** A `fetch` that answers every request with one SSE body made of `events`. */
function sseFetch(frames: { event?: string; data: unknown }[]): typeof fetch {
  const body = frames
    .map(
      (f) =>
        `${f.event ? `event: ${f.event}\n` : ""}data: ${typeof f.data === "string" ? f.data : JSON.stringify(f.data)}\n\n`,
    )
    .join("")
  return (async () =>
    new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } })) as typeof fetch
}

async function eventsOf(style: "openai" | "anthropic" | "openai-responses", fetchImpl: typeof fetch) {
  const events: StreamEvent[] = []
  const client = createClient({
    baseUrl: "http://127.0.0.1:1/v1",
    style,
    model: "m",
    apiKey: "k",
    fetch: fetchImpl,
  })
  const result = await client.run("why?", { onEvent: (ev) => events.push(ev) })
  const reasoning = events.filter((e) => e.type === "reasoning").map((e) => (e as { delta: string }).delta)
  return { events, reasoning, result }
}

describe("reasoning deltas become {type:'reasoning'} events", () => {
  it("Anthropic thinking_delta, before the text, never mixed into it", async () => {
    const { events, reasoning, result } = await eventsOf(
      "anthropic",
      sseFetch([
        {
          event: "message_start",
          data: {
            type: "message_start",
            message: {
              id: "msg_1",
              role: "assistant",
              content: [],
              usage: { input_tokens: 3, output_tokens: 0 },
            },
          },
        },
        {
          event: "content_block_start",
          data: {
            type: "content_block_start",
            index: 0,
            content_block: { type: "thinking", thinking: "", signature: "" },
          },
        },
        {
          event: "content_block_delta",
          data: {
            type: "content_block_delta",
            index: 0,
            delta: { type: "thinking_delta", thinking: "Let me " },
          },
        },
        {
          event: "content_block_delta",
          data: {
            type: "content_block_delta",
            index: 0,
            delta: { type: "thinking_delta", thinking: "think." },
          },
        },
        {
          event: "content_block_delta",
          data: {
            type: "content_block_delta",
            index: 0,
            delta: { type: "signature_delta", signature: "sig" },
          },
        },
        { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
        {
          event: "content_block_start",
          data: { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
        },
        {
          event: "content_block_delta",
          data: { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "42" } },
        },
        { event: "content_block_stop", data: { type: "content_block_stop", index: 1 } },
        {
          event: "message_delta",
          data: { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } },
        },
        { event: "message_stop", data: { type: "message_stop" } },
      ]),
    )
    expect(reasoning).toEqual(["Let me ", "think."])
    expect(result.text).toBe("42")
    const kinds = events.map((e) => e.type)
    expect(kinds.indexOf("reasoning")).toBeLessThan(kinds.indexOf("text"))
    // The thinking block (with its signature) stays in the transcript for the next request.
    expect(result.messages.at(-1)).toMatchObject({
      content: [
        { type: "thinking", thinking: "Let me think.", signature: "sig" },
        { type: "text", text: "42" },
      ],
    })
  })

  it("OpenAI-compatible reasoning_content beside the content", async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id: "c1",
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, finish_reason: finish }],
    })
    const { reasoning, result } = await eventsOf(
      "openai",
      sseFetch([
        { data: chunk({ role: "assistant", content: null, reasoning_content: "Hmm" }) },
        { data: chunk({ reasoning_content: ", yes." }) },
        { data: chunk({ content: "Yes" }) },
        { data: chunk({}, "stop") },
        { data: "[DONE]" },
      ]),
    )
    expect(reasoning).toEqual(["Hmm", ", yes."])
    expect(result.text).toBe("Yes")
  })

  it("Responses reasoning summary deltas", async () => {
    const item = { id: "rs_1", type: "reasoning", summary: [] }
    const msg = {
      id: "msg_1",
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Done", annotations: [] }],
    }
    const { reasoning, result } = await eventsOf(
      "openai-responses",
      sseFetch([
        {
          event: "response.created",
          data: { type: "response.created", response: { id: "resp_1", status: "in_progress", output: [] } },
        },
        {
          event: "response.output_item.added",
          data: { type: "response.output_item.added", output_index: 0, item },
        },
        {
          event: "response.reasoning_summary_text.delta",
          data: {
            type: "response.reasoning_summary_text.delta",
            item_id: "rs_1",
            output_index: 0,
            summary_index: 0,
            delta: "Plan: ",
          },
        },
        {
          event: "response.reasoning_summary_text.delta",
          data: {
            type: "response.reasoning_summary_text.delta",
            item_id: "rs_1",
            output_index: 0,
            summary_index: 0,
            delta: "answer.",
          },
        },
        {
          event: "response.output_item.done",
          data: {
            type: "response.output_item.done",
            output_index: 0,
            item: { ...item, summary: [{ type: "summary_text", text: "Plan: answer." }] },
          },
        },
        {
          event: "response.output_item.added",
          data: {
            type: "response.output_item.added",
            output_index: 1,
            item: { ...msg, status: "in_progress", content: [] },
          },
        },
        {
          event: "response.output_text.delta",
          data: {
            type: "response.output_text.delta",
            item_id: "msg_1",
            output_index: 1,
            content_index: 0,
            delta: "Done",
          },
        },
        {
          event: "response.output_item.done",
          data: { type: "response.output_item.done", output_index: 1, item: msg },
        },
        {
          event: "response.completed",
          data: {
            type: "response.completed",
            response: {
              id: "resp_1",
              status: "completed",
              output: [{ ...item, summary: [{ type: "summary_text", text: "Plan: answer." }] }, msg],
              usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
            },
          },
        },
      ]),
    )
    expect(reasoning).toEqual(["Plan: ", "answer."])
    expect(result.text).toBe("Done")
  })
})
