// One sample of fresh-resume.mjs, in a fresh process: import the modules, then resume the
// conversation parked in the SQLite file with the answer and report the timestamps.
// Only node: builtins are imported statically; everything measured is imported dynamically
// after the first mark, so the import time is the process's own.
//
//   node fresh-resume-child.mjs sdk|floor '<json: {path, id, answer, baseUrl, model, apiKey, pay, tools}>'
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
  const done = performance.now()
  await store.close()
  return { imported, done, text: result.text, status: result.status, output: result.toolCalls[0]?.output }
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
  const row = db.prepare("SELECT pending FROM tnx_conversations WHERE id = ?").get(cfg.id)
  const pending = JSON.parse(row.pending)
  if (pending.id !== cfg.answer.id) throw new Error(`floor: ${cfg.id} does not wait on ${cfg.answer.id}`)
  const messages = db
    .prepare("SELECT body FROM tnx_messages WHERE conversation_id = ? ORDER BY seq")
    .all(cfg.id)
    .map((r) => JSON.parse(r.body))
  // The halted call is the last assistant turn's; its placeholder result is replaced.
  const call = messages.at(-2).tool_calls.find((c) => c.id === pending.data.callId)
  const args = JSON.parse(call.function.arguments)
  const output = cfg.answer.ok ? `paid ${args.amount}` : `declined: ${pending.prompt}`
  messages[messages.length - 1] = { role: "tool", tool_call_id: call.id, content: output }
  const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 128 })
  const res = await request(`${cfg.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${cfg.apiKey}` },
    body: JSON.stringify({ model: cfg.model, messages, tools: cfg.tools }),
    dispatcher: agent,
  })
  const reply = JSON.parse(await res.body.text()).choices[0].message
  const done = performance.now()
  db.close()
  return { imported, done, text: reply.content, status: "done", output }
}

const result = mode === "sdk" ? await sdk() : mode === "floor" ? await floor() : undefined
if (!result) throw new Error(`unknown mode ${mode}`)
process.stdout.write(`${JSON.stringify({ timeOrigin: performance.timeOrigin, start, ...result })}\n`)
process.exit(0)
