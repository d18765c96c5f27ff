// The parked-run scenario shared by the parked-memory, resume-throughput and fresh-resume
// benchmarks, and its hand-written floor.
//
// Conversation i asks to pay invoice i. The model (the mock endpoint) calls `pay` with
// `{"amount":42}`; the tool suspends with `pending({kind: "approval", prompt: "Pay 42?"})`
// and, with no `waitFor`, the run halts and parks. The answer `{id, ok: true}` resumes it:
// the tool runs again with the answer and returns `paid 42`, and the model answers in text.
import { randomUUID } from "node:crypto"
import { Agent, request } from "undici"
import { API_KEY, MODEL } from "./harness.mjs"

export const FINAL = "Invoice paid."
export const PAID = "paid 42"
export const MOCK_ARGS = ["--tool", "pay", "--arguments", '{"amount":42}', "--text", FINAL]

export const PAY = {
  name: "pay",
  description: "Pays an invoice. Needs a human's approval first.",
  inputSchema: {
    type: "object",
    properties: { amount: { type: "number", description: "Amount to pay." } },
    required: ["amount"],
  },
}

/** The tools array both sides send. */
export const OPENAI_TOOLS = [
  {
    type: "function",
    function: { name: PAY.name, description: PAY.description, parameters: PAY.inputSchema },
  },
]

/** The user prompt of conversation `i`. */
export const promptOf = (i) => `Pay invoice ${i} (amount 42), then confirm.`

/** The SDK's tool, as a user would write it: it suspends until approved. */
export function payTool({ defineTool, pending }) {
  return defineTool({
    ...PAY,
    run: (args, ctx) =>
      ctx?.answer?.ok ? `paid ${args.amount}` : pending({ kind: "approval", prompt: `Pay ${args.amount}?` }),
  })
}

let sharedAgent

/**
 * The floor: a hand-written tool loop that parks a halted conversation as the least state it
 * needs (its transcript and the open request, in a Map) and resumes it with the answer by
 * sending the same follow-up request. undici `request` on a keep-alive Agent (the SDK's
 * settings), `JSON.stringify`d bodies, `JSON.parse`d replies.
 */
export function createParkingFloor({ baseUrl }) {
  // One keep-alive Agent per process, shared by every floor instance, like the SDK's.
  sharedAgent ??= new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 128 })
  const agent = sharedAgent
  const url = `${baseUrl}/chat/completions`
  const headers = { "content-type": "application/json", authorization: `Bearer ${API_KEY}` }
  const parked = new Map()

  async function chat(messages) {
    const res = await request(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: MODEL, messages, tools: OPENAI_TOOLS }),
      dispatcher: agent,
    })
    const text = await res.body.text()
    if (res.statusCode !== 200) throw new Error(`floor: HTTP ${res.statusCode}: ${text}`)
    return JSON.parse(text).choices[0].message
  }

  /** The tool: suspends without an answer, pays with an approving one. */
  function pay(args, answer) {
    if (answer?.ok) return { output: `paid ${args.amount}` }
    return { request: { id: `pnd-${randomUUID()}`, kind: "approval", prompt: `Pay ${args.amount}?` } }
  }

  return {
    parked,
    /** Runs conversation `id` until the tool suspends; parks it and returns the request. */
    async park(id, prompt) {
      const user = { role: "user", content: prompt }
      const message = await chat([user])
      const call = message.tool_calls?.[0]
      if (call?.function.name !== "pay") throw new Error(`floor: unexpected reply ${JSON.stringify(message)}`)
      const { request: req } = pay(JSON.parse(call.function.arguments))
      const pending = { id: req.id, kind: req.kind, prompt: req.prompt, data: { callId: call.id } }
      // The halted call gets a placeholder result, as in the SDK's transcript.
      parked.set(id, {
        messages: [
          user,
          message,
          { role: "tool", tool_call_id: pending.data.callId, content: pending.prompt },
        ],
        pending,
      })
      return pending
    },
    /** Resumes conversation `id` with `answer`: retries the tool, asks the model once more. */
    async resume(id, answer) {
      const entry = parked.get(id)
      if (!entry?.pending || entry.pending.id !== answer.id)
        throw new Error(`floor: ${id} does not wait on ${answer.id}`)
      const { messages, pending } = entry
      const call = messages[messages.length - 2].tool_calls[0]
      const result = answer.ok
        ? pay(JSON.parse(call.function.arguments), answer).output
        : `declined: ${pending.prompt}`
      const next = messages.slice(0, -1) // the placeholder is replaced, not kept beside
      next.push({ role: "tool", tool_call_id: call.id, content: result })
      const reply = await chat(next)
      next.push(reply)
      parked.set(id, { messages: next, pending: undefined })
      return { text: reply.content, output: result }
    },
  }
}

/** Closes the floor's shared keep-alive Agent. */
export async function closeFloorAgent() {
  await sharedAgent?.close()
  sharedAgent = undefined
}
