import {
  type Answer,
  AnswerConflictError,
  type AnswerDecision,
  ConfigError,
  HostUnsupportedError,
  type PendingEntry,
  type Request,
  type RunHost,
  type RunResult,
  UnknownRequestError,
} from "@toolnexus/core"

/**
 * A stand-in for `createStoreHost` until it lands (DESIGN §17): runs of scripted agents whose
 * state lives in a {@link FakeStore} that several hosts (several server instances) share, with
 * one decision per request (a second delivery is `AnswerConflictError` with the first
 * decision). `result` settles when the run ends or parks, as a store host's does.
 */
export interface FakeStore {
  runs: Map<string, FakeRun>
  decisions: Map<string, AnswerDecision>
  /** Every delivery the host accepted, in order. */
  delivered: Answer[]
  /** How many times each agent's gated tool ran. */
  toolRuns: Map<string, number>
}

interface FakeRun {
  agent: string
  prompt: string
  status: "running" | "pending" | "done"
  open: Request[]
  text: string
  waiters: (() => void)[]
}

/** A fresh shared store. */
export function createFakeStore(): FakeStore {
  return { runs: new Map(), decisions: new Map(), delivered: [], toolRuns: new Map() }
}

type Step = (run: FakeRun, runId: string, answers: Map<string, Answer>, store: FakeStore) => void

/**
 * The agents: `echo` answers its prompt; `deploy` asks for approval, then runs its tool once;
 * `survey` asks an `input` with a schema; `login` an authorization with a URL; `pair` asks two
 * approvals at once.
 */
const AGENTS: Record<string, Step> = {
  echo(run) {
    finish(run, `echo: ${run.prompt}`)
  },
  deploy(run, runId, answers, store) {
    const id = `${runId}.approve`
    const answer = answers.get(id)
    if (!answer)
      return park(run, [{ id, kind: "approval", prompt: `Deploy ${run.prompt}?`, data: { tool: "deploy" } }])
    if (!answer.ok) return finish(run, `not deployed (${answer.reason ?? "declined"})`)
    store.toolRuns.set("deploy", (store.toolRuns.get("deploy") ?? 0) + 1)
    finish(run, `deployed ${run.prompt}`)
  },
  survey(run, runId, answers) {
    const id = `${runId}.input`
    const answer = answers.get(id)
    if (!answer) {
      const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
      return park(run, [{ id, kind: "input", prompt: "Which city?", data: { schema } }])
    }
    finish(run, answer.ok ? `city: ${String(answer.data?.city)}` : "no city")
  },
  login(run, runId, answers) {
    const id = `${runId}.login`
    if (!answers.get(id))
      return park(run, [
        { id, kind: "authorization", prompt: "Log in", url: "https://login.example/authorize" },
      ])
    finish(run, "logged in")
  },
  pair(run, runId, answers) {
    const ids = [`${runId}.a`, `${runId}.b`]
    const open = ids
      .filter((id) => !answers.has(id))
      .map((id) => ({ id, kind: "approval", prompt: `Approve ${id}?` }))
    if (open.length > 0) return park(run, open)
    finish(run, ids.map((id) => `${id}=${answers.get(id)?.ok}`).join(" "))
  },
}

function park(run: FakeRun, open: Request[]): void {
  run.status = "pending"
  run.open = open
  wake(run)
}

function finish(run: FakeRun, text: string): void {
  run.status = "done"
  run.open = []
  run.text = text
  wake(run)
}

function wake(run: FakeRun): void {
  for (const waiter of run.waiters.splice(0)) waiter()
}

/**
 * A host over `store`. `engine`: behaves as an engine connection does — `result` settles at
 * the end only (a parked run waits in the engine) and `onEvent` is refused.
 */
export function createFakeHost(store: FakeStore, opts: { engine?: boolean } = {}): RunHost<RunResult> {
  const answersOf = (runId: string) =>
    new Map(store.delivered.filter((a) => a.id.startsWith(`${runId}.`)).map((a) => [a.id, a]))
  const step = (runId: string, run: FakeRun) => {
    const agent = AGENTS[run.agent] as Step
    // Runs after start returns, as a hosted run goes on in the background.
    queueMicrotask(() => agent(run, runId, answersOf(runId), store))
  }
  const listPending = async () => {
    const out: PendingEntry[] = []
    for (const [runId, run] of store.runs)
      for (const request of run.open)
        out.push({
          request,
          conversationId: runId,
          since: "2026-12-06T00:00:00Z",
          attempts: 0,
          state: "open",
        })
    return out
  }
  const unsupported = (operation: string) =>
    new HostUnsupportedError("fakeHost", operation, "not in this fake")
  return {
    async start(agent, runId, input, startOpts) {
      if (opts.engine && startOpts?.onEvent) throw unsupported("start({ onEvent })")
      if (!(agent in AGENTS)) throw new ConfigError(`no agent ${agent}`)
      if (store.runs.has(runId)) return { runId, started: false }
      if (typeof input !== "string") throw unsupported("content parts")
      const run: FakeRun = { agent, prompt: input, status: "running", open: [], text: "", waiters: [] }
      store.runs.set(runId, run)
      startOpts?.onEvent?.({ type: "tool_call", id: "call-1", name: agent, args: {} })
      step(runId, run)
      return { runId, started: true }
    },
    async result(runId) {
      const run = store.runs.get(runId)
      if (!run) throw new UnknownRequestError(runId, "no such run")
      while (run.status === "running" || (opts.engine && run.status === "pending"))
        await new Promise<void>((resolve) => run.waiters.push(resolve))
      const base = { text: "", messages: [], toolCalls: [], toolCallCount: 0, turns: 0, model: "fake", runId }
      const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 }
      return run.status === "pending"
        ? { ...base, usage, status: "pending", ...(run.open[0] ? { pending: run.open[0] } : {}) }
        : { ...base, usage, status: "done", text: run.text }
    },
    listPending,
    async findRequest(id) {
      return (await listPending()).find((entry) => entry.request.id === id)
    },
    async getDecision(id) {
      return store.decisions.get(id)
    },
    async send() {
      throw unsupported("send")
    },
    events() {
      throw unsupported("events")
    },
    async transcript() {
      throw unsupported("transcript")
    },
    async cancel() {
      throw unsupported("cancel")
    },
    async close() {},
    async deliverAnswer(answer, deliverOpts) {
      if (opts.engine && deliverOpts?.onEvent) throw unsupported("deliverAnswer({ onEvent })")
      const decided = store.decisions.get(answer.id)
      if (decided) throw new AnswerConflictError(answer.id, "it was applied", { decision: decided })
      for (const [runId, run] of store.runs) {
        const request = run.open.find((r) => r.id === answer.id)
        if (!request) continue
        const decision = answer.ok ? { ok: true } : { ok: false, reason: answer.reason ?? "declined" }
        store.decisions.set(answer.id, decision)
        store.delivered.push(answer)
        run.open = run.open.filter((r) => r.id !== answer.id)
        if (run.open.length === 0) {
          run.status = "running"
          step(runId, run)
          await new Promise<void>((resolve) => run.waiters.push(resolve))
        }
        return { runId, request, decision }
      }
      throw new UnknownRequestError(answer.id)
    },
  }
}
