/**
 * The one module of the app that talks to the store about requests and runs: starting runs
 * (plain conversations or team runs on a saved sub-agent runtime) and the request-identity
 * API of DESIGN §8–§9 (`findRequest`, one `listPending` entry per request id,
 * `deliverAnswer`, `listFailed`, `retryFailed`, the claim sweep). The rest of the app sees
 * only {@link InboxStore}.
 */
import { randomUUID } from "node:crypto"
import { type RuntimeOptions, createRuntime } from "@toolnexus/agents"
import type { Answer, Client, Toolkit } from "@toolnexus/core"
import * as durable from "@toolnexus/durable"
import {
  type DeliverOptions,
  type DeliverResult,
  type DurableStore,
  type FailedEntry,
  type PendingEntry,
  deliverAnswer,
  saveRuntime,
  sweepExpiredClaims,
} from "@toolnexus/durable"
import { HttpError } from "./http-error.js"

/** An open request, once per request id (for a sub-agent tree, its deepest holder). */
export type InboxEntry = PendingEntry

/** A request whose resumes failed `maxAttempts` times (DESIGN §9); only a retry moves it on. */
export type FailedInboxEntry = FailedEntry

/** What answering or starting did: the run it resumed and where it stands now. */
export type RunOutcome = DeliverResult

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
  /** The open request with this id, found through the store's request index. */
  findRequest(requestId: string): Promise<InboxEntry | undefined>
  /**
   * Applies an answer to the conversation or saved runtime holding its request.
   *
   * @throws UnknownRequestError when nothing waits on the id; AnswerConflictError when it was answered.
   */
  deliver(answer: Answer, opts?: { signal?: AbortSignal }): Promise<RunOutcome>
  /** Requests whose resumes failed too often, with their last error. */
  listFailed(opts?: { limit?: number }): Promise<FailedInboxEntry[]>
  /**
   * Resumes a failed request with its stored decision.
   *
   * @throws HttpError 501 while `@toolnexus/durable` has no `retryFailed`.
   */
  retryFailed(requestId: string): Promise<RunOutcome>
  /** Completes the runs whose workers died mid-resume; returns what was completed and what failed again. */
  sweep(): Promise<{ completed: string[]; failed: { id: string; error: unknown }[] }>
}

/** DESIGN §9's `retryFailed`, present once `@toolnexus/durable` exports it. */
type RetryFailed = (store: DurableStore, requestId: string, opts: DeliverOptions) => Promise<DeliverResult>

/** Creates the app's {@link InboxStore} over a durable store. */
export function createInboxStore(opts: InboxStoreOptions): InboxStore {
  const { store, client, team, leaseMs } = opts
  const retryFailed = (durable as { retryFailed?: RetryFailed }).retryFailed

  const deliverOptions = async (signal?: AbortSignal): Promise<DeliverOptions> => {
    const options: DeliverOptions = { client, toolkit: await opts.toolkit() }
    if (team) options.runtime = { ...team.runtime, store }
    if (leaseMs !== undefined) options.leaseMs = leaseMs
    if (signal) options.signal = signal
    return options
  }

  async function startTeamRun(lead: string, prompt: string): Promise<RunOutcome> {
    const key = `team-${randomUUID()}`
    // The namespace keeps the handle ids (`root/support.1`) of runtimes sharing the store apart.
    const rt = createRuntime({ ...(team as TeamOptions).runtime, store, namespace: `${key}:` })
    const handle = rt.spawn(rt.root, lead)
    rt.wake(handle, prompt)
    const result = await rt.wait(handle)
    // A parked tree lives on in its snapshot (which records its requests for findRequest);
    // the runtime object is simply dropped.
    if (result.status === "pending") await saveRuntime(store, key, rt)
    return { kind: "runtime", key, result }
  }

  return {
    async startRun(prompt, { team: asTeam }) {
      if (asTeam) {
        if (!team) throw new HttpError(400, "invalid_body", "this service has no team configured")
        return startTeamRun(team.lead, prompt)
      }
      const id = `run-${randomUUID()}`
      const result = await client.ask(prompt, { id, toolkit: await opts.toolkit() })
      return { kind: "conversation", id, result }
    },

    listPending: ({ limit = 100, kind } = {}) => store.listPending({ limit, ...(kind ? { kind } : {}) }),

    async findRequest(requestId) {
      // Longer ids are never valid request ids (DESIGN §8); no need to ask the store.
      if (requestId === "" || requestId.length > 200) return undefined
      return store.findRequest(requestId)
    },

    async deliver(answer, deliverOpts = {}) {
      return deliverAnswer(store, answer, await deliverOptions(deliverOpts.signal))
    },

    listFailed: ({ limit = 100 } = {}) => store.listFailed({ limit }),

    async retryFailed(requestId) {
      if (typeof retryFailed !== "function") {
        throw new HttpError(
          501,
          "not_supported",
          "this version of @toolnexus/durable cannot retry failed requests (no retryFailed)",
        )
      }
      return retryFailed(store, requestId, await deliverOptions())
    },

    async sweep() {
      const { completed, failed } = await sweepExpiredClaims(store, await deliverOptions())
      return {
        completed: completed.map((done) => (done.kind === "runtime" ? done.key : done.id)),
        failed: failed.map(({ conversationId, error }) => ({ id: conversationId, error })),
      }
    },
  }
}
