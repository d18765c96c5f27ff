// One sample of fresh-resume.mjs, in a fresh process: import the modules, then resume the
// conversation parked in the SQLite file with the answer, then a second one in the same
// process, and report the timestamps.
// Only node: builtins are imported statically; everything measured is imported dynamically
// after the first mark, so the import time is the process's own.
//
//   node fresh-resume-child.mjs sdk|floor '<json: {path, id, answer, baseUrl, model, apiKey, pay, tools}>'
import { randomUUID } from "node:crypto"

const start = performance.now()
const [mode, json] = process.argv.slice(2)

async function sdk() {
  const [{ createClient, createToolkit, defineTool, pending }, { askWithAnswer }, { SqliteStore }] =
    await Promise.all([
      import("@toolnexus/core"),
      import("@toolnexus/durable"),
      import("@toolnexus/durable/sqlite"),
    ])
  const imported = performance.now()
  // The answer arrives.
  const cfg = JSON.parse(json)
  const store = new SqliteStore({ path: cfg.path })
  const toolkit = await createToolkit({
    extraTools: [
      defineTool({
        ...cfg.pay,
        run: (args, ctx) =>
          ctx?.answer?.ok
            ? `paid ${args.amount}`
            : pending({ kind: "approval", prompt: `Pay ${args.amount}?` }),
      }),
    ],
  })
  const client = createClient({
    baseUrl: cfg.baseUrl,
    style: "openai",
    model: cfg.model,
    apiKey: cfg.apiKey,
    store,
  })
  const result = await askWithAnswer(client, { toolkit, id: cfg.id, answer: cfg.answer })
  // A second answer arrives, for another parked run: the same process resumes it.
  const second = performance.now()
  const again = await askWithAnswer(client, { toolkit, id: cfg.second.id, answer: cfg.second.answer })
  await store.close()
  return { imported, second, ...outcome(result, again) }
}

/** What the parent checks: both resumes finished with the paid tool output and the final text. */
function outcome(first, second) {
  const summary = (r) => ({ text: r.text, status: r.status, output: r.toolCalls?.[0]?.output ?? r.output })
  return { results: [summary(first), summary(second)] }
}

/** The floor: read the transcript with better-sqlite3, repair the halted turn, send it with undici. */
async function floor() {
  const [{ Agent, request }, { default: Database }] = await Promise.all([
    import("undici"),
    import("better-sqlite3"),
  ])
  const imported = performance.now()
  // The answer arrives.
  const cfg = JSON.parse(json)
  const db = new Database(cfg.path, { fileMustExist: true })
  const pendingOf = db.prepare("SELECT pending FROM tnx_conversations WHERE id = ?")
  const messagesOf = db.prepare(
    "SELECT body FROM tnx_messages WHERE conversation_key = " +
      "(SELECT conversation_key FROM tnx_conversations WHERE id = ?) ORDER BY seq",
  )
  // One claim, as exactly-once needs: the first answer to take the conversation wins.
  const claim = db.prepare(
    "UPDATE tnx_conversations SET claim_token = ?, claim_request_id = pending_id " +
      "WHERE id = ? AND pending_id = ? AND claim_token IS NULL",
  )
  const claimOnce = db.transaction((id, requestId) => claim.run(randomUUID(), id, requestId).changes === 1)
  const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 128 })
  async function resume(id, answer) {
    if (!claimOnce.immediate(id, answer.id)) throw new Error(`floor: ${id} does not wait on ${answer.id}`)
    const pending = JSON.parse(pendingOf.get(id).pending)
    const messages = messagesOf.all(id).map((r) => JSON.parse(r.body))
    // The halted call is the last assistant turn's; its placeholder result is replaced.
    const call = messages.at(-2).tool_calls.find((c) => c.id === pending.data.callId)
    const args = JSON.parse(call.function.arguments)
    const output = answer.ok ? `paid ${args.amount}` : `declined: ${pending.prompt}`
    messages[messages.length - 1] = { role: "tool", tool_call_id: call.id, content: output }
    const res = await request(`${cfg.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${cfg.apiKey}` },
      body: JSON.stringify({ model: cfg.model, messages, tools: cfg.tools }),
      dispatcher: agent,
    })
    const reply = JSON.parse(await res.body.text()).choices[0].message
    return { text: reply.content, status: "done", output }
  }
  const first = await resume(cfg.id, cfg.answer)
  const second = performance.now()
  const again = await resume(cfg.second.id, cfg.second.answer)
  db.close()
  return { imported, second, ...outcome(first, again) }
}

const result = mode === "sdk" ? await sdk() : mode === "floor" ? await floor() : undefined
if (!result) throw new Error(`unknown mode ${mode}`)
process.stdout.write(`${JSON.stringify({ timeOrigin: performance.timeOrigin, start, ...result })}\n`)
process.exit(0)
