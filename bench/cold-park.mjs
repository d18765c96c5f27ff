// The parked runs the cold-window benches resume (cold-resume-instructions.mjs,
// cold-functions.mjs): a mock model asking for `lookup`, then each id parked twice, by the SDK
// with `client.ask` on a SqliteStore and as the shared bench's floor does (the messages array
// as JSON in one row), each side in its own SQLite file.
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import Database from "better-sqlite3"
import { request } from "undici"
import { startMockServer } from "./harness.mjs"

/** The tool declarations the floor sends (the SDK sends the same from its toolkit). */
export const TOOLS = [
  {
    type: "function",
    function: {
      name: "lookup",
      description: "Look up the data.",
      parameters: { type: "object", properties: {} },
    },
  },
]

/** The child both benches run, resuming one side's run. */
export const CHILD = fileURLToPath(new URL("cold-resume-child.mjs", import.meta.url))

/**
 * Starts the mock and parks `ids` on both sides in a new folder. `close()` stops the mock and
 * removes the folder.
 */
export async function parkColdRuns(ids, prefix) {
  const server = await startMockServer(["--tool", "lookup", "--arguments", "{}", "--text", "done"])
  const dir = await mkdtemp(join(tmpdir(), prefix))
  const paths = { sdk: join(dir, "sdk.db"), floor: join(dir, "floor.db") }
  const store = new SqliteStore({ path: paths.sdk })
  const client = createClient({
    baseUrl: server.baseUrl,
    style: "openai",
    model: "mock",
    apiKey: "sk",
    retries: 0,
    store,
  })
  const toolkit = await createToolkit({
    extraTools: [
      defineTool({
        name: "lookup",
        description: "Look up the data.",
        inputSchema: { type: "object", properties: {} },
        run: (_a, ctx) =>
          ctx?.answer?.ok ? "data" : pending({ kind: "approval", prompt: "approve lookup?" }),
      }),
    ],
  })
  const floorDb = new Database(paths.floor)
  floorDb.pragma("journal_mode = WAL")
  floorDb.exec("CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, state TEXT NOT NULL)")
  const put = floorDb.prepare("INSERT OR REPLACE INTO runs (id, state) VALUES (?, ?)")
  for (const id of ids) {
    const parked = await client.ask("go", { toolkit, id })
    if (parked.status !== "pending") throw new Error("the SDK run did not park")
    const messages = [{ role: "user", content: "go" }]
    const res = await request(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk" },
      body: JSON.stringify({ model: "mock", messages, tools: TOOLS }),
    })
    const reply = (await res.body.json()).choices[0].message
    messages.push(reply)
    put.run(id, JSON.stringify({ messages, callId: reply.tool_calls[0].id }))
  }
  await store.close()
  floorDb.close()
  return {
    baseUrl: server.baseUrl,
    dir,
    paths,
    async close() {
      server.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
