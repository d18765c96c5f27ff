import { spawnSync } from "node:child_process"
import { mkdirSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { createToolkit } from "@toolnexus/core"
import { deliverAnswer, openStore } from "@toolnexus/durable"
import type { McpConnection } from "@toolnexus/mcp"
import { connectFiles } from "./files-server.js"
import { createModel } from "./model.js"

const CONVERSATION = "notes-today"
const dataDir = resolve(process.env.MCP_FILES_DATA ?? join(process.cwd(), ".data"))
const folder = join(dataDir, "workspace")
const storeUrl = `sqlite:${join(dataDir, "runs.db")}`
const say = (line: string) => process.stdout.write(`${line}\n`)
const self = `node ${relative(process.cwd(), process.argv[1] as string)}`

/** Without the files server the agent has no tools to act with: the step stops, saying why. */
function serverReady(mcp: McpConnection, step: string): boolean {
  const down = mcp.servers().find((s) => s.status !== "ready")
  if (!down) return true
  say(`[${step}] MCP server ${down.name} did not start: ${down.error ?? down.status}`)
  process.exitCode = 1
  return false
}

/** Step 1 (its own process): the agent wants to write; the run parks in SQLite; exit. */
async function ask(): Promise<void> {
  mkdirSync(folder, { recursive: true })
  const store = await openStore(storeUrl)
  const mcp = await connectFiles(folder)
  try {
    const { client, label } = createModel({ store }, folder)
    say(`[ask] pid ${process.pid}, model: ${label}, folder: ${folder}`)
    for (const s of mcp.servers())
      say(`[ask] MCP server ${s.name}: ${s.status}, ${s.tools} tools${s.error ? ` (${s.error})` : ""}`)
    if (!serverReady(mcp, "ask")) return
    const waiting = await store.getPending(CONVERSATION)
    if (waiting) {
      say(`[ask] ${CONVERSATION} already waits on "${waiting.prompt}"; answer it: ${self} answer approve`)
      return
    }
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const result = await client.ask("Put today's TODO list into notes.md.", { id: CONVERSATION, toolkit })
    if (result.status !== "pending" || !result.pending) {
      say(`[ask] the run finished without asking (status ${result.status}): ${result.text}`)
      return
    }
    say(`[ask] the agent said: ${result.text || "(no text)"}`)
    const { server, tool, args } = result.pending.data as {
      server: string
      tool: string
      args: { path?: string }
    }
    say(
      `[ask] it waits for a human: ${result.pending.kind} of ${server}/${tool} on ${args.path} (request ${result.pending.id})`,
    )
    say(`[ask] the run is parked in ${storeUrl}; this process and its MCP server now exit.`)
  } finally {
    await mcp.close()
    await store.close()
  }
}

/** Step 2 (a new process, with its own MCP server): answer the parked approval, finish the run. */
async function answer(decision: "approve" | "decline"): Promise<void> {
  const store = await openStore(storeUrl)
  const mcp = await connectFiles(folder)
  try {
    const { client } = createModel({ store }, folder)
    say(`[answer] pid ${process.pid}: loading parked runs from ${storeUrl}`)
    if (!serverReady(mcp, "answer")) return
    const entry = (await store.listPending({ kind: "approval" })).find(
      (p) => p.conversationId === CONVERSATION,
    )
    if (!entry) {
      say("[answer] nothing is waiting; run the ask step first.")
      process.exitCode = 1
      return
    }
    say(
      `[answer] ${entry.conversationId} has waited since ${entry.since}: "${entry.request.prompt}" → ${decision}`,
    )
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const ok = decision === "approve"
    // The request id is all a second process needs: deliverAnswer finds the run that holds it.
    const delivered = await deliverAnswer(
      store,
      ok ? { id: entry.request.id, ok } : { id: entry.request.id, ok, reason: "declined" },
      { client, toolkit },
    )
    const result = delivered.result
    say(`[answer] the run resumed from the halted call and finished (${result.status}):`)
    say(`[answer] agent: ${result.text}`)
  } finally {
    await mcp.close()
    await store.close()
  }
}

/** The demo: both steps, each in its own process. */
function demo(): void {
  say("toolnexus mcp-files: an agent on a folder through the MCP filesystem server\n")
  for (const step of [["ask"], ["answer", "approve"]]) {
    const child = spawnSync(process.execPath, [process.argv[1] as string, ...step], { stdio: "inherit" })
    if (child.status !== 0) {
      process.exitCode = child.status ?? 1
      return
    }
    say("")
  }
  say(`Try it by hand: ${self} ask, then ${self} answer approve|decline`)
}

const [command, arg] = process.argv.slice(2)
if (command === "ask") await ask()
else if (command === "answer") await answer(arg === "decline" ? "decline" : "approve")
else {
  const { rmSync } = await import("node:fs")
  rmSync(dataDir, { recursive: true, force: true })
  demo()
}
