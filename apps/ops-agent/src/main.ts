import { spawnSync } from "node:child_process"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { AnswerConflictError, type Toolkit, createToolkit } from "@toolnexus/core"
import { deliverAnswer, openStore } from "@toolnexus/durable"
import { createModel } from "./model.js"

const CONVERSATION = "disk-report"
const dataDir = resolve(process.env.OPS_AGENT_DATA ?? join(process.cwd(), ".data"))
const scratch = join(dataDir, "scratch")
const storeUrl = `sqlite:${join(dataDir, "runs.db")}`
const skillsDir = resolve(dirname(fileURLToPath(import.meta.url)), "../skills")
const say = (line: string) => process.stdout.write(`${line}\n`)
const self = `node ${relative(process.cwd(), process.argv[1] as string)}`

/** The builtins rooted in the scratch folder (bash and write approved first: the default) and the skill. */
function opsToolkit(): Promise<Toolkit> {
  return createToolkit({ builtins: { root: scratch }, skillsDir })
}

/** A scratch folder with something to measure. */
function seed(): void {
  mkdirSync(join(scratch, "logs"), { recursive: true })
  mkdirSync(join(scratch, "cache"), { recursive: true })
  writeFileSync(join(scratch, "logs", "app.log"), "x".repeat(64 * 1024))
  writeFileSync(join(scratch, "cache", "blob.bin"), "y".repeat(8 * 1024))
}

/** Starts the run; it parks on the first approval and this process exits. */
async function ask(): Promise<void> {
  seed()
  const store = await openStore(storeUrl)
  try {
    const { client, label } = createModel({ store })
    say(`[ask] pid ${process.pid}, model: ${label}, root: ${scratch}`)
    if (await store.getPending(CONVERSATION)) {
      say(`[ask] ${CONVERSATION} already waits; see ${self} inbox`)
      return
    }
    const result = await client.ask("How is the disk used here? Write a report.", {
      id: CONVERSATION,
      toolkit: await opsToolkit(),
    })
    report("ask", result.status, result.text, result.pending)
  } finally {
    await store.close()
  }
}

/** The approvals inbox: every open request in the shared store. */
async function inbox(): Promise<void> {
  const store = await openStore(storeUrl)
  try {
    const open = await store.listPending()
    if (open.length === 0) say("[inbox] nothing is waiting")
    for (const entry of open) {
      const { tool, args } = (entry.request.data ?? {}) as { tool?: string; args?: unknown }
      say(
        `[inbox] ${entry.request.id} ${entry.request.kind} ${tool} ${JSON.stringify(args)} (since ${entry.since})`,
      )
    }
  } finally {
    await store.close()
  }
}

/** Answers the oldest open request (or the one named) and lets the run go on. */
async function answer(decision: "approve" | "decline", requestId?: string): Promise<void> {
  const store = await openStore(storeUrl)
  try {
    const { client } = createModel({ store })
    const id = requestId ?? (await store.listPending())[0]?.request.id
    if (!id) {
      say("[answer] nothing is waiting; run the ask step first.")
      process.exitCode = 1
      return
    }
    const ok = decision === "approve"
    say(`[answer] pid ${process.pid}: ${decision} ${id}`)
    try {
      const delivered = await deliverAnswer(store, ok ? { id, ok } : { id, ok, reason: "declined" }, {
        client,
        toolkit: await opsToolkit(),
      })
      const result = delivered.result as {
        status: string
        text: string
        pending?: { id: string; data?: unknown }
      }
      report("answer", result.status, result.text, result.pending)
    } catch (error) {
      if (!AnswerConflictError.isInstance(error)) throw error
      say(`[answer] already decided: ${(error as Error).message}`)
      process.exitCode = 2
    }
  } finally {
    await store.close()
  }
}

function report(step: string, status: string, text: string, pending?: { id: string; data?: unknown }): void {
  if (text) say(`[${step}] agent: ${text}`)
  if (status === "pending" && pending) {
    const { tool, args } = (pending.data ?? {}) as { tool?: string; args?: unknown }
    say(`[${step}] waiting for approval: ${tool} ${JSON.stringify(args)} (request ${pending.id})`)
  } else say(`[${step}] the run finished (${status})`)
}

/** The demo: ask, then approve twice (bash, then write), each in its own process. */
function demo(): void {
  say("toolnexus ops-agent: builtins in a scratch folder, every bash and write approved first\n")
  for (const step of [["ask"], ["inbox"], ["answer", "approve"], ["inbox"], ["answer", "approve"]]) {
    const child = spawnSync(process.execPath, [process.argv[1] as string, ...step], { stdio: "inherit" })
    if (child.status !== 0) {
      process.exitCode = child.status ?? 1
      return
    }
  }
  say(`\nBy hand: ${self} ask, ${self} inbox, ${self} answer approve|decline [request id]`)
}

const [command, arg, id] = process.argv.slice(2)
if (command === "ask") await ask()
else if (command === "inbox") await inbox()
else if (command === "answer") await answer(arg === "decline" ? "decline" : "approve", id)
else {
  rmSync(dataDir, { recursive: true, force: true })
  demo()
}
