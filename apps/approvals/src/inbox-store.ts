/**
 * The one module of the app that talks to the store about requests and runs. It gives the
 * rest of the app the request-identity API of DESIGN §8 (`findRequest`, one `listPending`
 * entry per request id, `deliverAnswer`, `listFailed`, `retryFailed`) on top of what the
 * store offers today; when the store offers them itself, only this file changes.
 */
import { randomUUID } from "node:crypto"
import {
  type RuntimeOptions,
  type TaskResult,
  createRuntime,
} from "@toolnexus/agents"
import {
  type Answer,
  AnswerConflictError,
  type Client,
  type Request,
  type RunResult,
  type Toolkit,
  UnknownRequestError,
  assertAnswerFits,
} from "@toolnexus/core"
import * as durable from "@toolnexus/durable"
import { HttpError } from "./http-error.js"
import { type DurableStore, askWithAnswer, resumeRuntime, saveRuntime } from "@toolnexus/durable"

/** An open request, once per request id (the deepest holder of a sub-agent tree). */
export interface InboxEntry {
  request: Request
  /** The conversation that holds the request (for a tree, its deepest holder). */
  conversationId: string
  /** The saved runtime the request belongs to, for a sub-agent tree. */
  runtimeKey?: string
  /** The agent path for a tree's request, e.g. `["root", "lead.1", "payments.1"]`. */
  path?: string[]
  /** RFC 3339 time the request was first saved as pending. */
  since: string
  /** How many resumes were tried with an answer to it. */
  attempts: number
  state: "open" | "claimed"
}

/** A request whose resumes failed `maxAttempts` times (DESIGN §9); only a retry moves it on. */
export interface FailedInboxEntry extends Omit<InboxEntry, "state"> {
  state: "failed"
  lastError: { name: string; code?: string; message: string }
}

/** What answering or starting did: the run it resumed and where it stands now. */
export type RunOutcome =
  | { kind: "conversation"; id: string; result: RunResult }
  | { kind: "runtime"; key: string; result: TaskResult }

/** A sub-agent team the app can start runs on (a lead agent that delegates). */
export interface TeamOptions {
  /** The runtime's agents, model and transport; the store is the app's. */
  runtime: Omit<RuntimeOptions, "store" | "namespace">
  /** The agent each team run starts with. */
  lead: string
}

/** Options of {@link createInboxStore}. */
export interface InboxStoreOptions {
  store: DurableStore
  client: Client
  toolkit: () => Promise<Toolkit>
  team?: TeamOptions
  /** How long a resume holds its claim before another delivery may take it over. */
  leaseMs?: number
}

/** The request-level operations the app uses. */
export interface InboxStore {
  /** Starts a run (a plain conversation, or a team run on a sub-agent runtime) and parks it when it suspends. */
  startRun(prompt: string, opts: { team: boolean }): Promise<RunOutcome>
  /** Open requests, one per request id, oldest first. */
  listPending(opts?: { limit?: number; kind?: string }): Promise<InboxEntry[]>
  /** The open request with this id, found through an index (never by scanning the pending list). */
  findRequest(requestId: string): Promise<InboxEntry | undefined>
  /**
   * Applies an answer to the conversation or saved runtime holding its request.
   *
   * @throws UnknownRequestError when no run ever waited on the id; AnswerConflictError when it was answered.
   */
  deliver(answer: Answer, opts?: { signal?: AbortSignal }): Promise<RunOutcome>
  /** Requests whose resumes failed too often; `supported: false` when the store does not track them. */
  listFailed(opts?: { limit?: number }): Promise<{ supported: boolean; entries: FailedInboxEntry[] }>
  /**
   * Resumes a failed request with its stored decision.
   *
   * @throws HttpError 501 while `@toolnexus/durable` has no `retryFailed`.
   */
  retryFailed(requestId: string): Promise<RunOutcome>
  /** Completes the runs whose workers died mid-resume; returns how many were completed and failed. */
  sweep(): Promise<{ completed: string[]; failed: { id: string; error: unknown }[] }>
}

/** The app's own record of where a request lives, kept until the store indexes requests itself. */
interface RequestRecord {
  conversationId: string
  runtimeKey?: string
  /** The team run's lead handle, whose result is the run's result. */
  lead?: string
  since: string
}

const RECORD_PREFIX = "approvals:request:"
// A tree parked on one request lists one entry per parked level; read enough to dedupe a page.
const LEVELS_PER_REQUEST = 4

/** The store's §8/§9 methods, present once the store implements them. */
interface IdentityStore {
  listFailed?: (opts?: { limit?: number }) => Promise<FailedInboxEntry[]>
}
type RetryFailed = (store: DurableStore, requestId: string, opts: unknown) => Promise<unknown>

/** Creates the app's {@link InboxStore} over a durable store. */
export function createInboxStore(opts: InboxStoreOptions): InboxStore {
  const { store, client, team, leaseMs } = opts
  const identity = store as DurableStore & IdentityStore
  const retryFailedFn = (durable as { retryFailed?: RetryFailed }).retryFailed
  const listsFailed = typeof identity.listFailed === "function"

  const teamOptions = (namespace?: string): RuntimeOptions => {
    if (!team) throw new UnknownRequestError("", "this service has no team configured")
    return { ...team.runtime, store, ...(namespace === undefined ? {} : { namespace }) }
  }

  async function remember(outcome: RunOutcome, lead?: string): Promise<void> {
    const pending = outcome.result.pending
    if (outcome.result.status !== "pending" || !pending) return
    const record: RequestRecord = { conversationId: outcome.kind === "conversation" ? outcome.id : "", since: new Date().toISOString() }
    if (outcome.kind === "runtime") {
      record.runtimeKey = outcome.key
      record.lead = lead
      record.conversationId = holderOf(`${outcome.key}:`, pending)
    }
    await store.putSnapshot(RECORD_PREFIX + pending.id, record)
  }

  async function recordOf(requestId: string): Promise<RequestRecord | undefined> {
    if (requestId === "" || requestId.length > 200) return undefined
    const record = (await store.getSnapshot(RECORD_PREFIX + requestId)) as RequestRecord | undefined
    return typeof record?.conversationId === "string" ? record : undefined
  }

  async function findRequest(requestId: string): Promise<InboxEntry | undefined> {
    const record = await recordOf(requestId)
    if (!record) return undefined
    const request = await store.getPending(record.conversationId)
    if (request?.id !== requestId) return undefined
    return entryOf(request, record.conversationId, record.since)
  }

  async function startTeamRun(prompt: string): Promise<RunOutcome> {
    const key = `team-${randomUUID()}`
    const rt = createRuntime(teamOptions(`${key}:`))
    const lead = rt.spawn(rt.root, (team as TeamOptions).lead)
    rt.wake(lead, prompt)
    const result = await rt.wait(lead)
    // A parked tree lives on in its snapshot; the runtime object is simply dropped.
    if (result.status === "pending") await saveRuntime(store, key, rt)
    const outcome: RunOutcome = { kind: "runtime", key, result }
    await remember(outcome, lead.id)
    return outcome
  }

  async function deliver(answer: Answer, deliverOpts: { signal?: AbortSignal } = {}): Promise<RunOutcome> {
    const record = await recordOf(answer.id)
    if (!record) throw new UnknownRequestError(answer.id, "no run of this service ever waited on it")
    const open = await findRequest(answer.id)
    if (!open) {
      throw new AnswerConflictError(
        answer.id,
        `request ${JSON.stringify(answer.id)} was already answered; its run has moved on`,
      )
    }
    assertAnswerFits(open.request, answer)
    let outcome: RunOutcome
    if (record.runtimeKey) {
      const rt = await resumeRuntime(store, record.runtimeKey, answer, { ...teamOptions(), leaseMs })
      const result = await rt.wait({ id: record.lead ?? "root" })
      outcome = { kind: "runtime", key: record.runtimeKey, result }
    } else {
      const result = await askWithAnswer(client, {
        id: record.conversationId,
        answer,
        toolkit: await opts.toolkit(),
        signal: deliverOpts.signal,
        leaseMs,
      })
      outcome = { kind: "conversation", id: record.conversationId, result }
    }
    await remember(outcome, record.lead)
    return outcome
  }

  return {
    async startRun(prompt, { team: asTeam }) {
      if (asTeam) return startTeamRun(prompt)
      const id = `run-${randomUUID()}`
      const result = await client.ask(prompt, { id, toolkit: await opts.toolkit() })
      const outcome: RunOutcome = { kind: "conversation", id, result }
      await remember(outcome)
      return outcome
    },

    async listPending({ limit = 100, kind } = {}) {
      const raw = await store.listPending({ limit: limit * LEVELS_PER_REQUEST, ...(kind ? { kind } : {}) })
      const byRequest = new Map<string, InboxEntry>()
      for (const { id, request, since } of raw) {
        const seen = byRequest.get(request.id)
        // Every parked level of a tree lists the escalated request; the deepest holder answers it.
        if (seen && seen.conversationId.length >= id.length) continue
        byRequest.set(request.id, entryOf(request, id, seen?.since ?? since))
      }
      return [...byRequest.values()].slice(0, limit)
    },

    findRequest,
    deliver,

    async listFailed({ limit = 100 } = {}) {
      if (!listsFailed) return { supported: false, entries: [] }
      return { supported: true, entries: await (identity.listFailed as NonNullable<IdentityStore["listFailed"]>)({ limit }) }
    },

    async retryFailed(requestId) {
      if (typeof retryFailedFn !== "function") {
        throw new HttpError(501, "not_supported", "this version of @toolnexus/durable cannot retry failed requests (no retryFailed)")
      }
      const runtime = team ? teamOptions() : undefined
      return (await retryFailedFn(store, requestId, {
        client,
        toolkit: await opts.toolkit(),
        runtime,
        leaseMs,
      })) as RunOutcome
    },

    async sweep() {
      const { completed, failed } = await durable.sweepExpiredClaims(client, { toolkit: await opts.toolkit(), leaseMs })
      return { completed: completed.map((c) => c.id), failed }
    },
  }
}

/** The conversation id of the deepest handle holding an escalated request: the namespace plus its path. */
function holderOf(namespace: string, request: Request): string {
  const path = pathOf(request)
  return `${namespace}${(path ?? ["root"]).join("/")}`
}

/**
 * An open entry. A team run's conversations are named `<runtime key>:<handle id>` (the
 * namespace {@link createInboxStore} gives the runtime), which tells the runtime and the agent
 * path even where the stored copy of the request carries no `path` (the deepest holder's).
 */
function entryOf(request: Request, conversationId: string, since: string): InboxEntry {
  const entry: InboxEntry = { request, conversationId, since, attempts: 0, state: "open" }
  const colon = conversationId.indexOf(":")
  if (conversationId.startsWith("team-") && colon > 0) {
    entry.runtimeKey = conversationId.slice(0, colon)
    entry.path = conversationId.slice(colon + 1).split("/")
  }
  const path = pathOf(request)
  if (path) entry.path = path
  return entry
}

function pathOf(request: Request): string[] | undefined {
  const path = request.data?.path
  return Array.isArray(path) && path.every((p) => typeof p === "string") ? (path as string[]) : undefined
}
