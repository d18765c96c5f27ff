import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { deliverAnswer, openStore } from "@toolnexus/durable"
import { createCoordinator } from "./coordinator.js"
import { startTravelAgent } from "./travel-agent.js"

const TRIP = "trip-lisbon"
const dataDir = resolve(process.env.A2A_AGENTS_DATA ?? join(process.cwd(), ".data"))
const travelDb = `sqlite:${join(dataDir, "travel.db")}`
const coordinatorDb = `sqlite:${join(dataDir, "coordinator.db")}`
const urlFile = join(dataDir, "travel.url")
const bookings = join(dataDir, "bookings.log")
const say = (line: string) => process.stdout.write(`${line}\n`)
const self = `node ${relative(process.cwd(), process.argv[1] as string)}`

/** The travel agent's process: serves A2A until it is stopped (or killed). */
async function travel(): Promise<void> {
  mkdirSync(dataDir, { recursive: true })
  const store = await openStore(travelDb)
  const server = await startTravelAgent({
    store,
    port: Number(process.env.A2A_TRAVEL_PORT ?? 0),
    onBooked: (flight) => appendFileSync(bookings, `${process.pid} ${flight}\n`),
  })
  writeFileSync(urlFile, server.url)
  say(`[travel] pid ${process.pid}: serving A2A at ${server.url} (tasks in ${travelDb})`)
  say("READY")
  const stop = async () => {
    await server.close()
    await store.close()
    process.exit(0)
  }
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
}

function travelUrl(): string {
  if (!existsSync(urlFile)) throw new Error(`no travel agent is running: start it with ${self} travel`)
  return readFileSync(urlFile, "utf8").trim()
}

/** Step 1 (its own process): the coordinator calls the travel agent; the approval parks. */
async function ask(): Promise<void> {
  const store = await openStore(coordinatorDb)
  try {
    const { client, toolkit } = await createCoordinator(store, travelUrl())
    say(`[coordinator] pid ${process.pid}: asking the travel agent`)
    const result = await client.ask("Plan my trip to Lisbon.", { id: TRIP, toolkit })
    if (result.status !== "pending" || !result.pending) {
      say(`[coordinator] finished without asking (${result.status}): ${result.text}`)
      return
    }
    const { agent, taskId } = result.pending.data as { agent: string; taskId: string }
    say(`[coordinator] the ${agent} agent's task ${taskId} waits: "${result.pending.prompt}"`)
    say(`[coordinator] parked in ${coordinatorDb}; this process exits.`)
  } finally {
    await store.close()
  }
}

/** The coordinator's approvals inbox: every open request, whichever agent raised it. */
async function inbox(): Promise<void> {
  const store = await openStore(coordinatorDb)
  try {
    const open = await store.listPending()
    say(`[inbox] ${open.length} open request(s)`)
    for (const entry of open) {
      const data = entry.request.data as {
        agent?: string
        message?: { parts?: { data?: { request?: { kind?: string } } }[] }
      }
      const remote = data.message?.parts?.find((p) => p.data?.request)?.data?.request?.kind
      say(
        `[inbox] ${entry.request.id} (${entry.request.kind}${remote ? `, remote ${remote}` : ""} from ${data.agent}): ${entry.request.prompt}`,
      )
    }
  } finally {
    await store.close()
  }
}

/** Step 2 (a new process): one answer in the coordinator's inbox finishes both runs. */
async function answer(decision: "approve" | "decline"): Promise<void> {
  const store = await openStore(coordinatorDb)
  try {
    const [entry] = await store.listPending()
    if (!entry) {
      say("[answer] nothing is waiting; run the ask step first.")
      process.exitCode = 1
      return
    }
    const { client, toolkit } = await createCoordinator(store, travelUrl())
    say(`[answer] pid ${process.pid}: ${decision} "${entry.request.prompt}"`)
    const ok = decision === "approve"
    const delivered = await deliverAnswer(
      store,
      ok
        ? { id: entry.request.id, ok, data: { text: "approved" } }
        : { id: entry.request.id, ok, reason: "declined" },
      { client, toolkit },
    )
    say(`[answer] ${delivered.result.text}`)
  } finally {
    await store.close()
  }
}

function startTravelProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [process.argv[1] as string, "travel"], {
    stdio: ["ignore", "pipe", "inherit"],
  })
  return new Promise((resolveStart, reject) => {
    let out = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes("READY")) {
        process.stdout.write(out.replace("READY\n", ""))
        resolveStart(child)
      }
    })
    child.on("exit", (code) => reject(new Error(`the travel agent exited with ${code}`)))
  })
}

function step(...args: string[]): boolean {
  const child = spawnSync(process.execPath, [process.argv[1] as string, ...args], { stdio: "inherit" })
  if (child.status !== 0) process.exitCode = child.status ?? 1
  return child.status === 0
}

/** The demo: every step in its own process, and the travel agent killed and restarted in between. */
async function demo(): Promise<void> {
  say("toolnexus a2a-agents: a coordinator calls a travel agent over A2A\n")
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(dataDir, { recursive: true })
  writeFileSync(bookings, "")
  const first = await startTravelProcess()
  if (!step("ask") || !step("inbox")) return void first.kill("SIGKILL")
  await new Promise<void>((done) => {
    first.on("exit", () => done())
    first.kill("SIGKILL")
  })
  say(`[demo] the travel agent (pid ${first.pid}) was killed with SIGKILL; starting a new one`)
  const second = await startTravelProcess()
  try {
    step("answer", "approve")
    const made = readFileSync(bookings, "utf8").split("\n").filter(Boolean)
    say(`[demo] bookings made: ${made.length} (${made.join("; ")})`)
  } finally {
    second.kill("SIGTERM")
  }
  say(
    `\nTry it by hand: ${self} travel (keep it running), then ${self} ask, ${self} inbox, ${self} answer approve|decline`,
  )
}

const [command, arg] = process.argv.slice(2)
if (command === "travel") await travel()
else if (command === "ask") await ask()
else if (command === "inbox") await inbox()
else if (command === "answer") await answer(arg === "decline" ? "decline" : "approve")
else await demo()
