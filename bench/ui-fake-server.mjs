// The scripted LLM endpoint of ui-handler.mjs, in its own process so its CPU is never the
// client's: @toolnexus/core/testing's fake server (streaming OpenAI chat completions).
import { createFakeLLMServer } from "@toolnexus/core/testing"

const server = await createFakeLLMServer({
  rules: [
    {
      match: (req) => req.toolResults.length > 0,
      reply: (req) => ({ text: `Done: ${req.toolResults.map((r) => r.content).join(" | ")}` }),
    },
    { match: "refund", reply: { toolCalls: [{ name: "refund", arguments: { orderId: "A1", amount: 30 } }] } },
  ],
  fallback: { text: "Hello there. This is a streamed answer of a dozen words or so, in pieces." },
})
process.send?.({ type: "ready", url: server.url })
process.on("disconnect", () => void server.close().then(() => process.exit(0)))
