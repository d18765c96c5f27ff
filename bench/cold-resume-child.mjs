// One sample of cold-resume-instructions.mjs: a fresh process resumes a run parked in SQLite
// as the shared bench's S3 phase 2 does (its worker imports better-sqlite3, then the adapter's
// modules, then t0: open the store, read the pending request, answer, resume). It exits as
// soon as the resumed run's first LLM request has been written (undici's `bodySent`), or,
// with `imported`, right after the imports. It marks the start (t0 after the imports, or with
// `warm` the end of a first resume) and the end (the request written) of the counted window.
//
// `setup` is `request` with t0 before the setup (store, client, toolkit), as the shared bench's
// S3 takes it: its t0 comes before the adapter's s3Setup2. `import` starts the window before
// the side's imports (the shared bench's import_ms, after better-sqlite3, which its worker
// loads for every peer): §7's "import + the resumed run's first LLM request". `imports` counts
// the imports alone (the same start, the end right after them).
//
//   node cold-resume-child.mjs sdk|floor imported|imports|import|request|setup|warm '<json: {path, id, id2, baseUrl}>'
import diagnostics from "node:diagnostics_channel"
// What the shared bench's worker loads before the adapter (lib/worker.mjs and its lib/util.mjs),
// so that the first ESM import of a builtin is billed here as it is there: node:fs's, for one,
// costs ~30 M instructions (its facade reads every export) and is never the adapter's.
import "node:fs"
import "node:path"
import "node:perf_hooks"
import "node:url"
import Database from "better-sqlite3"

const [mode, stop, json] = process.argv.slice(2)
const cfg = JSON.parse(json)
// The window's two ends: the parent runs callgrind with `--dump-before=kill`, so each mark
// dumps the counts so far and the instructions between the marks are one dump of their own.
const mark = () => process.kill(process.pid, 0)
const exitAtRequest = () =>
  diagnostics.subscribe("undici:request:bodySent", function requestSent() {
    mark()
    process.exit(0)
  })
if (stop === "import") exitAtRequest()
if (stop === "import" || stop === "imports") mark()
const modules =
  mode === "sdk"
    ? await Promise.all([
        import("@toolnexus/core"),
        import("@toolnexus/durable"),
        import("@toolnexus/durable/sqlite"),
      ])
    : await Promise.all([import("undici")])
if (stop === "imported") process.exit(0)
if (stop === "imports") {
  mark()
  process.exit(0)
}

if (stop === "setup") {
  exitAtRequest()
  mark()
}
let resume
if (mode === "sdk") {
  // What the shared bench's adapters/ours.mjs s3Setup2 + resume do.
  const [core, durable, { SqliteStore }] = modules
  const store = new SqliteStore({ path: cfg.path })
  const client = core.createClient({
    baseUrl: cfg.baseUrl,
    style: "openai",
    model: "mock",
    apiKey: "sk",
    retries: 0,
    store,
  })
  const lookup = core.defineTool({
    name: "lookup",
    description: "Look up the data.",
    inputSchema: { type: "object", properties: {} },
    run: (_a, ctx) =>
      ctx?.answer?.ok ? "data" : core.pending({ kind: "approval", prompt: "approve lookup?" }),
  })
  const toolkit = await core.createToolkit({ extraTools: [lookup] })
  resume = async (id) => {
    const pending = await store.getPending(id)
    await durable.askWithAnswer(client, { toolkit, id, answer: { id: pending.id, ok: true } })
  }
} else {
  // What the shared bench's adapters/floor.mjs s3Setup2 + resume do.
  const [{ request, Agent }] = modules
  const db = new Database(cfg.path)
  db.pragma("journal_mode = WAL")
  db.exec("CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, state TEXT NOT NULL)")
  const get = db.prepare("SELECT state FROM runs WHERE id = ?")
  const del = db.prepare("DELETE FROM runs WHERE id = ?")
  const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 60_000 })
  resume = async (id) => {
    const state = JSON.parse(get.get(id).state)
    state.messages.push({ role: "tool", tool_call_id: state.callId, content: "data" })
    const res = await request(`${cfg.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk" },
      dispatcher,
      body: JSON.stringify({ model: "mock", messages: state.messages, tools: cfg.tools }),
    })
    await res.body.json()
    del.run(id)
  }
}
// request: t0 → the first resume's request. warm: the first resume, then from its end to the
// second resume's request.
if (stop === "request") {
  exitAtRequest()
  mark()
}
await resume(cfg.id)
exitAtRequest()
mark()
await resume(cfg.id2)
throw new Error(`${mode}: the resume ended without sending a request`)
