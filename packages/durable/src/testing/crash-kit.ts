import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Message, Request } from "@toolnexus/core"
import { type FakeReply, type FakeRequestView, createFakeLLMServer } from "@toolnexus/core/testing"
import type { FailedEntry } from "../durable-store.js"
import { type CrashJob, type KitStore, openKitStore } from "./crash-job.js"
import { type TcpProxy, startTcpProxy } from "./tcp-proxy.js"

/** The persistence boundaries a worker is killed at (SIGKILL), in the order a resume crosses them. */
export const CRASH_BOUNDARIES = [
  "after-claim",
  "during-tool",
  "after-tool",
  "after-checkpoint",
  "after-llm-reply",
  "before-save",
  "after-save",
  "during-renewal",
] as const

/** A boundary, or one of the fault scenarios that kill nothing. */
export type CrashPoint =
  | (typeof CRASH_BOUNDARIES)[number]
  | "slow-model"
  | "poison"
  | "connection-cut"
  | "connection-blackhole"

/** Options of {@link runCrashKit}. */
export interface CrashKitOptions {
  /** The store under test, as each worker process opens it. */
  store: KitStore
  /**
   * For the connection scenarios: the store server's address and the store as reached
   * through a proxy on `port` (the kit owns the proxy; the server is never touched).
   */
  proxy?: {
    /** The store server's address, which the kit's proxy forwards to. */
    target: {
      /** The server's host name or IP address. */
      host: string
      /** The server's TCP port. */
      port: number
    }
    /** The store as the workers open it through the proxy listening on 127.0.0.1 at `port`. */
    store: (port: number) => KitStore
  }
  /** Only these points; default all (the connection ones only with `proxy`). */
  points?: CrashPoint[]
  /** Only these flows; default both. */
  flows?: ("askWithAnswer" | "resumeRuntime")[]
  /** The claims' lease in the workers; default 1 200 ms. */
  leaseMs?: number
  /** The store operation deadline in the workers; default 400 ms (at most half the lease). */
  opTimeoutMs?: number
  /** Scenarios run at once; default 4. */
  concurrency?: number
}

/** What the kit measured for one scenario. */
export interface CrashOutcome {
  /**
   * The resume path the scenario ran: `askWithAnswer` (a conversation) or `resumeRuntime` (a two-level
   * tree).
   */
  flow: "askWithAnswer" | "resumeRuntime"
  /** Where the worker was killed, or which fault scenario ran. */
  point: CrashPoint
  /** The run completed (no open request, the decision stored, the final answer saved). */
  completed: boolean
  /** How often the approved tool started with the answer. */
  toolRuns: number
  /** How many results for the approved call the final transcripts hold (1 = applied once). */
  decisionsApplied: number
  /** Every tool call has exactly one result, in every transcript of the run. */
  balanced: boolean
  /** The most tool runs §9 allows here: 2 only when killed between the tool's start and its checkpoint. */
  allowedToolRuns: number
  /** What broke the promise; empty when it held. */
  problems: string[]
}

/** The kit's report: one outcome per flow and point. */
export interface CrashReport {
  /** Every scenario's outcome, one per flow and point run. */
  outcomes: CrashOutcome[]
  /** The outcomes with problems. */
  failures: CrashOutcome[]
}

const WORKER = fileURLToPath(new URL("./crash-worker.js", import.meta.url))
const MAX_ATTEMPTS = 3

/**
 * The crash-point kit of DESIGN §9: for each persistence boundary of `askWithAnswer` and of
 * `resumeRuntime` (a two-level tree), a worker process resumes an approved request and is
 * killed with SIGKILL there; then the run is recovered as a host would (a sweep of expired
 * claims, else a redelivery). Also: a model slower than the lease (the heartbeat keeps the
 * claim; a concurrent delivery is refused), a poison run (the model answers 400 forever:
 * `failed` after 3 attempts, then `retryFailed`), and with `proxy` the store connection cut
 * and blackholed mid-resume. Each scenario must complete, apply the decision once, run no
 * checkpointed tool again and leave balanced transcripts.
 *
 * @returns the report; it throws an `Error` listing every scenario that broke the promise.
 * @example
 * // a custom store: my-store.js exports createStore({ opTimeoutMs }) => DurableStore
 * await runCrashKit({ store: { module: new URL("./my-store.js", import.meta.url).href } })
 */
export async function runCrashKit(opts: CrashKitOptions): Promise<CrashReport> {
  const leaseMs = opts.leaseMs ?? 1_200
  const opTimeoutMs = opts.opTimeoutMs ?? 400
  const model = new ScriptedModel()
  const server = await createFakeLLMServer({ fallback: (req) => model.reply(req) })
  const dir = mkdtempSync(join(tmpdir(), "tnx-crash-kit-"))
  const points =
    opts.points ??
    ([
      ...CRASH_BOUNDARIES,
      "slow-model",
      "poison",
      ...(opts.proxy ? ["connection-cut", "connection-blackhole"] : []),
    ] as CrashPoint[])
  const flows = opts.flows ?? ["askWithAnswer", "resumeRuntime"]
  const scenarios = flows.flatMap((flow) => points.map((point) => ({ flow, point })))
  const outcomes: CrashOutcome[] = []
  // Migrate once, with time to spare, before the workers (with short deadlines) race.
  const prepared = await openKitStore(opts.store, 30_000)
  await prepared.listPending({ limit: 1 }).finally(() => prepared.close())
  try {
    const effects = join(dir, "effects.jsonl")
    writeFileSync(effects, "")
    const env = { server: server.url, effects, leaseMs, opTimeoutMs, model, opts }
    await forEachLimited(scenarios, opts.concurrency ?? 4, async ({ flow, point }) => {
      outcomes.push(await runScenario(env, flow, point))
    })
  } finally {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  }
  const order = (o: CrashOutcome) => flows.indexOf(o.flow) * 100 + points.indexOf(o.point)
  outcomes.sort((a, b) => order(a) - order(b))
  const failures = outcomes.filter((o) => o.problems.length > 0)
  if (failures.length > 0) {
    const lines = failures.map((f) => `  ${f.flow} / ${f.point}: ${f.problems.join("; ")}`)
    throw new Error(`the crash-point kit found broken promises:\n${lines.join("\n")}`)
  }
  return { outcomes, failures }
}

/** How the scripted model answers, per scenario marker (the text after `#`). */
class ScriptedModel {
  /** Markers whose model answers 400 to the request after the tool (until healed). */
  readonly poisoned = new Set<string>()
  /** Markers whose model replies slowly after the tool, with the delay. */
  readonly slow = new Map<string, number>()
  /** Called when the request after the tool arrives (the checkpoint was saved before it). */
  readonly onResumeRequest = new Map<string, () => void>()

  reply(req: FakeRequestView): FakeReply {
    const marker = /#([a-z-]+-[0-9a-f]{8})/.exec(JSON.stringify(req.body.messages))?.[1] ?? ""
    const result = req.toolResults[0]?.content
    const lead = req.system.includes("lead")
    // The top of the run (the lead, or a plain conversation) is what a poisoned model fails:
    // a child's failure would reach the lead as an error result it can answer.
    if ((lead || req.system === "") && result !== undefined && this.poisoned.has(marker)) {
      return { status: 400, text: "poisoned: this request can never succeed" }
    }
    if (lead) {
      if (result === undefined) {
        return { toolCalls: [{ name: "task", arguments: { agent: "payer", prompt: `pay 5 #${marker}` } }] }
      }
      return { text: `lead: ${result}` }
    }
    if (result === undefined) return { toolCalls: [{ name: "pay", arguments: { amount: 5, ref: marker } }] }
    this.onResumeRequest.get(marker)?.()
    const delayMs = this.slow.get(marker)
    return { text: `done: ${result}`, ...(delayMs ? { delayMs } : {}) }
  }
}

interface KitEnv {
  server: string
  /** The kit run's one effects log. */
  effects: string
  leaseMs: number
  opTimeoutMs: number
  model: ScriptedModel
  opts: CrashKitOptions
}

async function runScenario(
  env: KitEnv,
  flow: CrashOutcome["flow"],
  point: CrashPoint,
): Promise<CrashOutcome> {
  const marker = `${point}-${randomUUID().slice(0, 8)}`
  const id = `kit-${flow}-${marker}`
  const effects = env.effects
  const problems: string[] = []
  let proxy: TcpProxy | undefined
  const base = {
    flow,
    id,
    marker: `#${marker}`,
    llmUrl: `${env.server}/v1`,
    effects,
    leaseMs: env.leaseMs,
    opTimeoutMs: env.opTimeoutMs,
    maxAttempts: MAX_ATTEMPTS,
    store: env.opts.store,
  }
  const run = (job: Partial<CrashJob> & Pick<CrashJob, "role">) => runWorker({ ...base, ...job } as CrashJob)
  try {
    // Halting is not under test: it gets a generous deadline on a busy machine.
    const halted = (await run({ role: "halt", opTimeoutMs: 5_000 })) as { pending?: Request }
    if (!halted.pending) throw new Error(`the run did not halt: ${JSON.stringify(halted)}`)
    const answer = { id: halted.pending.id, ok: true }
    const boundary = (CRASH_BOUNDARIES as readonly string[]).includes(point)
    if (boundary) {
      if (point === "during-renewal") env.model.slow.set(marker, env.leaseMs)
      const killed = await run({ role: "resume", answer, die: point })
      if (!killed.killed) problems.push(`the worker was not killed at ${point}: ${JSON.stringify(killed)}`)
    } else if (point === "slow-model") {
      // The model outlasts the lease twice over; renewals keep the claim, so a delivery in
      // the middle is refused and the first worker completes alone. What is tested is the
      // renewals, not the store's speed: this one runs with twice the lease and half of that
      // as its operation deadline, so one slow renewal on a busy machine is not a lost claim.
      const slow = { leaseMs: env.leaseMs * 2, opTimeoutMs: Math.max(env.opTimeoutMs, env.leaseMs) }
      env.model.slow.set(marker, slow.leaseMs * 2.5)
      const first = run({ role: "resume", answer, ...slow })
      await sleep(slow.leaseMs * 1.5)
      const second = await run({ role: "resume", answer, ...slow })
      if (second.error !== "AnswerConflictError")
        problems.push(`a delivery during the slow resume got ${JSON.stringify(second)}`)
      const done = await first
      if (done.status !== "done") problems.push(`the slow resume ended ${JSON.stringify(done)}`)
    } else if (point === "poison") {
      env.model.poisoned.add(marker)
      // Deliveries fail until the attempts are used up (a sweep of another scenario may
      // retry it too: that counts as well), then the request is failed.
      let listed: FailedEntry | undefined
      for (let delivery = 1; delivery <= 3 * MAX_ATTEMPTS && listed === undefined; delivery++) {
        const failed = await run({ role: "resume", answer })
        // A runtime's failed cascade is an error result (the top's TaskResult), not a throw.
        const llmFailure =
          failed.code === "TNX_LLM_HTTP" ||
          (failed.status === "error" && /HTTP 400/.test(String(failed.text)))
        if (!llmFailure && failed.code !== "TNX_ANSWER_CONFLICT") {
          problems.push(`delivery ${delivery} ended ${JSON.stringify(failed)}`)
        }
        listed = await failedEntry(env, answer.id)
        if (listed === undefined && failed.code === "TNX_ANSWER_CONFLICT") await sleep(env.leaseMs / 4)
      }
      if (!/HTTP 400/.test(listed?.lastError.message ?? ""))
        problems.push(`listFailed shows ${JSON.stringify(listed)}`)
      const again = await run({ role: "resume", answer })
      if (again.error !== "AnswerConflictError")
        problems.push(`a delivery to the failed request got ${JSON.stringify(again)}`)
      const swept = await run({ role: "recover", answer })
      if ((swept.completed as string[] | undefined)?.includes(answer.id) || swept.recovered) {
        problems.push(`a sweep picked the failed request up: ${JSON.stringify(swept)}`)
      }
      env.model.poisoned.delete(marker)
      const retried = await run({ role: "retry", answer })
      if (retried.status !== "done") problems.push(`retryFailed ended ${JSON.stringify(retried)}`)
    } else {
      const proxied = env.opts.proxy
      if (!proxied) throw new Error(`${point} needs the kit's proxy option`)
      proxy = await startTcpProxy(proxied.target)
      const outage = proxy
      // The outage starts once the tool's result is checkpointed (the next model request
      // comes after the checkpoint) and lasts while the model thinks.
      env.model.slow.set(marker, env.leaseMs * 3)
      env.model.onResumeRequest.set(marker, () =>
        point === "connection-cut" ? outage.cut() : outage.blackhole(),
      )
      const cut = await run({ role: "resume", answer, store: proxied.store(proxy.port) })
      if (cut.status === "done") problems.push("the resume completed through a dead connection")
      env.model.slow.delete(marker)
      env.model.onResumeRequest.delete(marker)
    }
    env.model.slow.delete(marker)
    // Recover as a host would: the lease runs out, then a sweep (or a redelivery) completes.
    const deadline = Date.now() + env.leaseMs * 8 + 10_000
    for (;;) {
      const state = await inspect(env, flow, id, answer.id)
      if (state.completed) break
      if (Date.now() > deadline) {
        problems.push("stuck: the run never completed after the crash")
        break
      }
      await run({ role: "recover", answer })
      await sleep(env.leaseMs / 4)
    }
    const state = await inspect(env, flow, id, answer.id)
    const runs = readEffects(effects, marker)
    const allowedToolRuns = point === "during-tool" || point === "after-tool" ? 2 : 1
    if (runs.length > allowedToolRuns)
      problems.push(`the tool ran ${runs.length} times (at most ${allowedToolRuns})`)
    if (new Set(runs.map((r) => r.key)).size > 1) problems.push("a re-run had another idempotency key")
    if (state.completed && state.decisionsApplied !== 1)
      problems.push(`the decision was applied ${state.decisionsApplied} times`)
    if (!state.balanced) problems.push("a transcript is unbalanced")
    return {
      flow,
      point,
      completed: state.completed,
      toolRuns: runs.length,
      decisionsApplied: state.decisionsApplied,
      balanced: state.balanced,
      allowedToolRuns,
      problems,
    }
  } catch (error) {
    problems.push(String(error))
    return {
      flow,
      point,
      completed: false,
      toolRuns: readEffects(effects, marker).length,
      decisionsApplied: 0,
      balanced: false,
      allowedToolRuns: 1,
      problems,
    }
  } finally {
    await proxy?.close()
  }
}

async function failedEntry(env: KitEnv, requestId: string): Promise<FailedEntry | undefined> {
  const store = await openKitStore(env.opts.store, 5_000)
  try {
    return (await store.listFailed()).find((e) => e.request.id === requestId)
  } finally {
    await store.close()
  }
}

/** Reads the final state through a fresh store handle. */
async function inspect(
  env: KitEnv,
  flow: CrashOutcome["flow"],
  id: string,
  requestId: string,
): Promise<{ completed: boolean; decisionsApplied: number; balanced: boolean }> {
  const store = await openKitStore(env.opts.store, 5_000)
  try {
    // A runtime's handles live under its namespace (the runtime key) in the same store.
    const conversations = flow === "askWithAnswer" ? [id] : [`${id}/root/lead.1`, `${id}/root/lead.1/payer.1`]
    const transcripts: Message[][] = []
    for (const conversation of conversations) transcripts.push((await store.get(conversation)) ?? [])
    const open = await store.findRequest(requestId)
    const decision = await store.getDecision(requestId)
    const leaf = transcripts[transcripts.length - 1] as Message[]
    const finalText = lastAssistantContent(transcripts[0] as Message[])
    const completed =
      open === undefined &&
      decision?.ok === true &&
      (flow === "askWithAnswer"
        ? finalText.startsWith("done: paid")
        : finalText.startsWith("lead: done: paid"))
    return {
      completed,
      decisionsApplied: resultsForApprovedCall(leaf),
      balanced: transcripts.every(isBalanced),
    }
  } finally {
    await store.close()
  }
}

function lastAssistantContent(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role: string; content?: unknown }
    if (m.role === "assistant") return typeof m.content === "string" ? m.content : ""
  }
  return ""
}

/** The tool results (OpenAI style) answering the `pay` call that carried the approval. */
function resultsForApprovedCall(messages: Message[]): number {
  const payCalls = new Set<string>()
  for (const m of messages as { role: string; tool_calls?: { id: string; function: { name: string } }[] }[]) {
    for (const call of m.tool_calls ?? []) if (call.function.name === "pay") payCalls.add(call.id)
  }
  return (messages as { role: string; tool_call_id?: string; content?: string }[]).filter(
    (m) =>
      m.role === "tool" &&
      m.tool_call_id !== undefined &&
      payCalls.has(m.tool_call_id) &&
      m.content === "paid 5",
  ).length
}

/** Every assistant tool call has exactly one result before the next assistant turn (OpenAI style). */
function isBalanced(messages: Message[]): boolean {
  let open = new Map<string, number>()
  for (const m of messages as { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[]) {
    if (m.role === "assistant") {
      if ([...open.values()].some((n) => n !== 1)) return false
      open = new Map((m.tool_calls ?? []).map((c) => [c.id, 0]))
    } else if (m.role === "tool") {
      const seen = open.get(m.tool_call_id ?? "")
      if (seen === undefined) return false
      open.set(m.tool_call_id as string, seen + 1)
    }
  }
  return [...open.values()].every((n) => n === 1)
}

/** The approved tool's starts in scenario `ref`, whichever worker ran them. */
function readEffects(file: string, ref: string): { key: string }[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { phase: string; ref: string; key: string })
    .filter((e) => e.phase === "start" && e.ref === ref)
}

/** Runs one worker; resolves with its JSON line, or `{ killed: true }` when SIGKILL ended it. */
function runWorker(job: CrashJob): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER], {
      env: { ...process.env, TNX_CRASH_JOB: JSON.stringify(job) },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let out = ""
    let err = ""
    child.stdout.on("data", (d) => {
      out += d
    })
    child.stderr.on("data", (d) => {
      err += d
    })
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
    child.on("error", reject)
    child.on("exit", (_code, signal) => {
      clearTimeout(timer)
      if (signal === "SIGKILL" && out === "") return resolve({ killed: true })
      const line = out.split("\n").find(Boolean)
      if (line === undefined)
        return reject(new Error(`a kit worker (${job.role}) printed nothing: ${err.slice(0, 2000)}`))
      resolve(JSON.parse(line) as Record<string, unknown>)
    })
  })
}

async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) await fn(items[next++] as T)
  })
  await Promise.all(lanes)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
