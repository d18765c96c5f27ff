import { spawnSync } from "node:child_process"
import { mkdirSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { createToolkit } from "@toolnexus/core"
import { askWithAnswer, openStore } from "@toolnexus/durable"
import { createModel } from "./model.js"
import { transferFunds } from "./transfer-tool.js"

const CONVERSATION = "invoice-INV-7"
const dataDir = resolve(process.env.QUICKSTART_DATA ?? join(process.cwd(), ".data"))
const storeUrl = `sqlite:${join(dataDir, "quickstart.db")}`
const say = (line: string) => process.stdout.write(`${line}\n`)
/** How to run this script again from the current folder, for the hints we print. */
const self = `node ${relative(process.cwd(), process.argv[1] as string)}`

/** Step 1 (its own process): the agent asks for approval; the run parks in SQLite; exit. */
async function ask(): Promise<void> {
  mkdirSync(dataDir, { recursive: true })
  const store = await openStore(storeUrl)
  const { client, label } = createModel({ store })
  say(`[ask] pid ${process.pid}, model: ${label}`)
  const toolkit = await createToolkit({ extraTools: [transferFunds] })
  const waiting = await store.getPending(CONVERSATION)
  if (waiting) {
    say(`[ask] ${CONVERSATION} already waits on "${waiting.prompt}"; answer it: ${self} answer approve`)
    await store.close()
    return
  }
  const result = await client.ask("Please pay invoice INV-7: $120 to ACME GmbH.", {
    id: CONVERSATION,
    toolkit,
  })
  if (result.status !== "pending" || !result.pending) {
    say(`[ask] the run finished without asking (status ${result.status}): ${result.text}`)
  } else {
    say(`[ask] the agent said: ${result.text || "(no text)"}`)
    say(
      `[ask] it waits for a human: ${result.pending.kind} — "${result.pending.prompt}" (request ${result.pending.id})`,
    )
    say(`[ask] the run is parked in ${storeUrl}; this process now exits.`)
  }
  await store.close()
}

/** Step 2 (a new process): find the parked request, answer it, finish the run from the store. */
async function answer(decision: "approve" | "decline"): Promise<void> {
  const store = await openStore(storeUrl)
  const { client } = createModel({ store })
  say(`[answer] pid ${process.pid}: loading parked runs from ${storeUrl}`)
  const parked = await store.listPending({ kind: "approval" })
  const entry = parked.find((p) => p.conversationId === CONVERSATION)
  if (!entry) {
    say(`[answer] nothing is waiting; run the ask step first.`)
    await store.close()
    process.exitCode = 1
    return
  }
  say(
    `[answer] ${entry.conversationId} has waited since ${entry.since}: "${entry.request.prompt}" → ${decision}`,
  )
  const toolkit = await createToolkit({ extraTools: [transferFunds] })
  const ok = decision === "approve"
  const result = await askWithAnswer(client, {
    id: entry.conversationId,
    toolkit,
    answer: ok ? { id: entry.request.id, ok } : { id: entry.request.id, ok, reason: "declined" },
  })
  say(
    `[answer] the run resumed from the halted call and finished (${result.status}, ${result.turns} new LLM turn${result.turns === 1 ? "" : "s"}):`,
  )
  say(`[answer] agent: ${result.text}`)
  await store.close()
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
  say(`Try it by hand: ${self} ask, then ${self} answer approve|decline`)
}

const [command, arg] = process.argv.slice(2)
if (command === "ask") await ask()
else if (command === "answer") await answer(arg === "decline" ? "decline" : "approve")
else {
  // A fresh demo starts from an empty store.
  const { rmSync } = await import("node:fs")
  rmSync(dataDir, { recursive: true, force: true })
  demo()
}
