// The HTTP client of ui-handler.mjs's node:http variants, in its own process so its CPU is
// never the server's: on {url, turns, prefix}, posts one chat turn after the other (each a
// fresh chat id), reads each reply to its end, checks it, and reports back.
import { Agent, request } from "undici"

const agent = new Agent({ keepAliveTimeout: 30_000, connections: 4 })
let seq = 0

process.on("message", async ({ url, turns, prefix }) => {
  try {
    for (let i = 0; i < turns; i++) {
      const body = JSON.stringify({
        id: `${prefix}-${++seq}`,
        messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
        trigger: "submit-message",
      })
      const res = await request(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        dispatcher: agent,
      })
      const text = await res.body.text()
      if (!text.endsWith("data: [DONE]\n\n")) throw new Error(`unexpected body: ${text.slice(0, 200)}`)
    }
    process.send({ ok: true })
  } catch (error) {
    process.send({ ok: false, error: String(error) })
  }
})
process.on("disconnect", () => process.exit(0))
