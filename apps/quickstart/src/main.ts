import { spawnSync } from "node:child_process"
import { mkdirSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { createToolkit } from "@toolnexus/core"
import { askWithAnswer, openStore } from "@toolnexus/durable"
import { friendlyError } from "./friendly-error.js"
import { createModel, modelLocation } from "./model.js"
import { streamPrinter } from "./stream-printer.js"
import { transferFunds } from "./transfer-tool.js"

const CONVERSATION = "invoice-INV-7"
const dataDir = resolve(process.env.QUICKSTART_DATA ?? join(process.cwd(), ".data"))
const storeUrl = `sqlite:${join(dataDir, "quickstart.db")}`
const write = (text: string) => process.stdout.write(text)
const say = (line: string) => write(`${line}\n`)
/** How to run this script again from the current folder, for the hints we print. */
const self = `node ${relative(process.cwd(), process.argv[1] as string)}`

/** Step 1 (its own process): the agent asks for approval; the run parks in SQLite; exit. */
async function ask(): Promise<void> {
  mkdirSync(dataDir, { recursive: true })
  const store = await openStore(storeUrl)
  const { client, label } = createModel({ store })
  say(`[ask] pid ${process.pid}, model: ${label}`)
  try {
    const toolkit = await createToolkit({ extraTools: [transferFunds] })
    const waiting = await store.getPending(CONVERSATION)
    if (waiting) {
      say(`[ask] ${CONVERSATION} already waits on "${waiting.prompt}"; answer it: ${self} answer approve`)
      return
    }
    // The agent's text streams to the terminal as it arrives.
    const printer = streamPrinter("ask", write)
    const result = await client.ask("Please pay invoice INV-7: $120 to ACME GmbH.", {
      id: CONVERSATION,
      toolkit,
      onEvent: printer.onEvent,
    })
    printer.end()
    if (result.status !== "pending" || !result.pending) {
      say(`[ask] the run finished without asking (status ${result.status})`)
    } else {
      say(
        `[ask] it waits for a human: ${result.pending.kind} — "${result.pending.prompt}" (request ${result.pending.id})`,
      )
      say(`[ask] the run is parked in ${storeUrl}; this process now exits.`)
    }
  } finally {
    await store.close()
  }
}

/** Step 2 (a new process): find the parked request, answer it, finish the run from the store. */
async function answer(decision: "approve" | "decline"): Promise<void> {
  const store = await openStore(storeUrl)
  const { client } = createModel({ store })
  say(`[answer] pid ${process.pid}: loading parked runs from ${storeUrl}`)
  try {
    const parked = await store.listPending({ kind: "approval" })
    const entry = parked.find((p) => p.conversationId === CONVERSATION)
    if (!entry) {
      say(`[answer] nothing is waiting; run the ask step first.`)
      process.exitCode = 1
      return
    }
    say(
      `[answer] ${entry.conversationId} has waited since ${entry.since}: "${entry.request.prompt}" → ${decision}`,
    )
    const toolkit = await createToolkit({ extraTools: [transferFunds] })
    const ok = decision === "approve"
    const printer = streamPrinter("answer", write)
    const result = await askWithAnswer(client, {
      id: entry.conversationId,
      toolkit,
      answer: ok ? { id: entry.request.id, ok } : { id: entry.request.id, ok, reason: "declined" },
      onEvent: printer.onEvent,
    })
    printer.end()
    say(
      `[answer] the run resumed from the halted call and finished (${result.status}, ${result.turns} new LLM turn${result.turns === 1 ? "" : "s"}).`,
    )
  } finally {
    await store.close()
  }
}

/** Runs one step; a failure is one friendly line on stderr (with the fix), not a stack trace. */
async function step(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body()
  } catch (error) {
    process.stderr.write(`[${name}] ${friendlyError(error, modelLocation())}\n`)
    if (process.env.QUICKSTART_DEBUG) console.error(error)
    process.exitCode = 1
  }
}

/** The demo: both steps, each in its own process, so you can see the run survive an exit. */
function demo(): void {
  say("toolnexus quickstart: a durable approval flow on SQLite\n")
  for (const step of [["ask"], ["answer", "approve"]]) {
    const child = spawnSync(process.execPath, [process.argv[1] as string, ...step], { stdio: "inherit" })
    if (child.status !== 0) {
      process.exitCode = child.status ?? 1
      return
    }
    say("")
  }
  // Run through `npm run demo`, the current folder is this app's, not the one the user typed in.
  const here = relative(process.env.INIT_CWD ?? process.cwd(), process.cwd())
  say(`Try it by hand${here ? ` in ${here}` : ""}: ${self} ask, then ${self} answer approve|decline`)
}

const [command, arg] = process.argv.slice(2)
if (command === "ask") await step("ask", ask)
else if (command === "answer") await step("answer", () => answer(arg === "decline" ? "decline" : "approve"))
else {
  // A fresh demo starts from an empty store.
  const { rmSync } = await import("node:fs")
  rmSync(dataDir, { recursive: true, force: true })
  demo()
}
