/**
 * The inbox's other source of pending requests: runs that live in a durable-execution engine
 * (`@toolnexus/restate`, `@toolnexus/dbos`), reached through an `EngineConnection`. The engine
 * re-drives runs after a crash, so there is nothing to sweep and nothing fails for good here.
 */
import { randomUUID } from "node:crypto"
import type { EngineConnection, PendingEntry, RunResult } from "@toolnexus/core"
import { HttpError } from "./http-error.js"
import type { InboxStore, RunOutcome } from "./inbox-store.js"

/** Options of {@link createEngineInboxStore}. */
export interface EngineInboxOptions {
  /** The engine's connection (`connectRestate`, `connectDbos`). */
  engine: EngineConnection<unknown>
  /** The agent plain runs start (`POST /runs`). */
  agent: string
  /** The agent team runs start (`POST /runs {"team": true}`), if any. */
  teamAgent?: string
  /** How long starting or answering waits for the run to finish or wait again; default 30 s. */
  settleMs?: number
}

/** An {@link InboxStore} over an engine connection. */
export function createEngineInboxStore(opts: EngineInboxOptions): InboxStore {
  const { engine } = opts
  const settleMs = opts.settleMs ?? 30_000

  /** Where the run stands once it has moved on: finished, or waiting on a request of its own. */
  async function settle(runId: string, previous?: string): Promise<RunOutcome> {
    const deadline = Date.now() + settleMs
    for (;;) {
      const open = (await engine.listPending()).find((e) => runOf(e) === runId && e.request.id !== previous)
      if (open) return { kind: "conversation", id: runId, result: pendingResult(open) }
      try {
        const result = (await engine.result(runId, { timeoutMs: 250 })) as RunResult
        return { kind: "conversation", id: runId, result }
      } catch (error) {
        if ((error as { code?: string }).code !== "TNX_ABORTED") throw error
      }
      if (Date.now() > deadline) throw new HttpError(504, "run_pending", `run ${runId} has not settled yet`)
    }
  }

  return {
    async startRun(prompt, { team }) {
      const agent = team ? opts.teamAgent : opts.agent
      if (agent === undefined) throw new HttpError(400, "invalid_body", "this service has no team configured")
      const runId = `run-${randomUUID()}`
      await engine.start(agent, runId, prompt)
      return settle(runId)
    },
    listPending: ({ limit = 100, kind } = {}) => engine.listPending({ limit, ...(kind ? { kind } : {}) }),
    async findRequest(requestId) {
      if (requestId === "" || requestId.length > 200) return undefined
      return engine.findRequest(requestId)
    },
    async deliver(answer) {
      const { runId } = await engine.deliverAnswer(answer)
      return settle(runId, answer.id)
    },
    listFailed: async () => [],
    async retryFailed() {
      throw new HttpError(501, "not_supported", "runs on an engine are retried by the engine itself")
    },
    sweep: async () => ({ completed: [], failed: [] }),
  }
}

function runOf(entry: PendingEntry): string {
  return entry.runtimeKey ?? entry.conversationId
}

/** What the inbox shows for a run that waits: its request, no text yet. */
function pendingResult(entry: PendingEntry): RunResult {
  return {
    status: "pending",
    text: "",
    messages: [],
    pending: entry.request,
    toolCalls: [],
    toolCallCount: 0,
    turns: 0,
    model: "",
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  }
}
