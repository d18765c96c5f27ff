import type { RuntimeEvent, RuntimeOptions, TaskResult } from "@toolnexus/agents"
import {
  type AskOptions,
  type Client,
  type CommittedSnapshot,
  ConfigError,
  type JSONSchema,
  type Message,
  type Prompt,
  type RunResult,
  type StreamEvent,
  type Toolkit,
} from "@toolnexus/core"
import type { DurableStore } from "../durable-store.js"
import { type RunAbort, withRunAbort } from "@toolnexus/core/engine"
import { saveRuntime } from "../resume/runtime-persistence.js"

/** What a hosted run runs: a client conversation, or a runtime tree from its `root` def. */
export interface HostedRunAgent {
  /** A run is `client.ask(input, { id })` on the store the client was made with. */
  client?: Client
  /** The tools of a `client` run. */
  toolkit?: Toolkit
  /** A run is a runtime tree: spawn(`root`) → wake(input) → wait, saved when it parks. */
  runtime?: Omit<RuntimeOptions, "store" | "namespace" | "executor"> & {
    /** The registry's def the tree is spawned from. */
    root: string
  }
}

/** Options of {@link startHostedRun}. */
export interface StartHostedRunOptions {
  /** Aborts the run: a client run stops, a runtime tree is closed. */
  signal?: AbortSignal
  /**
   * @internal The store host's abort of the run, instead of `signal`: a client run gets it
   * through `withRunAbort`, so no `AbortSignal` is made unless the run reads one.
   */
  abort?: RunAbort
  /** Every event of the run (a runtime's: every handle's, state changes included). */
  onEvent?: (ev: StreamEvent | RuntimeEvent) => void
  /** Called with the spawned root handle's id, before it runs. */
  onHandle?: (handleId: string) => void
  /** A client run's toolkit for this run instead of the agent's (the agent's plus the caller's relay tools). */
  toolkit?: Toolkit
  /** A client run's transcript before `input`, stored as its conversation first (`HostRelayOptions.history`). */
  history?: Message[]
  /** The JSON Schema a client run's final answer must match. */
  output?: JSONSchema
  /** A client run's request, when it halts on one, expires then (`HostRelayOptions.expiresAt`). */
  expiresAt?: string
  /**
   * A client run's snapshot written with its final save, in one store call (`commitSnapshot`
   * of `client.ask`): the host's run record. Not with `expiresAt`, whose stamp is a save after.
   */
  commit?: (result: RunResult) => CommittedSnapshot | undefined
}

/** How a hosted run ended or parked: a conversation's result, or the runtime root handle's. */
export type HostedRunResult =
  | {
      /** `"conversation"`: a client run, conversation id = the run id. */
      kind: "conversation"
      /** The run's result (`pending` set when it parked). */
      result: RunResult
    }
  | {
      /** `"runtime"`: a runtime tree, saved under the run id while it is parked. */
      kind: "runtime"
      /** The root handle's result (`status: "pending"` when it parked). */
      result: TaskResult
    }

/**
 * The one way a run of a hosted agent starts over a durable store: a client agent is
 * `client.ask(input, { id: runId })` (the store is the client's); a runtime agent is
 * createRuntime (namespace `runId`) → spawn(root) → wake → wait, and a tree that parks is saved
 * under key `runId` (its snapshot records its requests, so `deliverAnswer` resumes it).
 *
 * @throws ConfigError when a client agent's client uses another store, or a runtime agent gets
 *   content parts (a handle's prompt is text).
 */
export function startHostedRun(
  store: DurableStore,
  agent: HostedRunAgent,
  runId: string,
  input: Prompt,
  opts: StartHostedRunOptions = {},
): Promise<HostedRunResult> {
  const { client } = agent
  // A conversation turn with no transcript to save first and no deadline to stamp after (every
  // chat turn): the ask's promise and one `then`, no async frame and await of its own.
  if (client && (opts.history === undefined || opts.history.length === 0) && opts.expiresAt === undefined) {
    try {
      if (client.conversationStore() !== store) return startAny(store, agent, runId, input, opts)
      return Promise.resolve(client.ask(input, askOptionsOf(agent, runId, opts))).then(conversationOutcome)
    } catch (error) {
      return Promise.reject(error)
    }
  }
  return startAny(store, agent, runId, input, opts)
}

/** {@link startHostedRun}, every case. */
async function startAny(
  store: DurableStore,
  agent: HostedRunAgent,
  runId: string,
  input: Prompt,
  opts: StartHostedRunOptions,
): Promise<HostedRunResult> {
  const { client, runtime } = agent
  if (client) {
    if (client.conversationStore() !== store)
      throw new ConfigError("a hosted client agent's `client` must use the host's store")
    // The caller's transcript becomes the conversation `ask` loads and adds `input` to.
    if (opts.history !== undefined && opts.history.length > 0) await store.save(runId, opts.history)
    const result = await client.ask(input, askOptionsOf(agent, runId, opts))
    const stamped = stampExpiry(store, runId, result, opts.expiresAt)
    if (stamped !== undefined) await stamped
    return { kind: "conversation", result }
  }
  if (!runtime) throw new ConfigError("a hosted agent needs `client` or `runtime`")
  return startRuntimeRun(store, runtime, runId, input, opts)
}

/** A conversation run's `ask` options. Built by assignment: one object a turn, not a spread per optional field. */
function askOptionsOf(agent: HostedRunAgent, runId: string, opts: StartHostedRunOptions): AskOptions {
  const askOpts: AskOptions = { id: runId, toolkit: opts.toolkit ?? agent.toolkit }
  if (opts.output !== undefined) askOpts.output = opts.output
  if (opts.abort) withRunAbort(askOpts, opts.abort)
  else if (opts.signal) askOpts.signal = opts.signal
  if (opts.onEvent) askOpts.onEvent = opts.onEvent
  if (opts.commit) askOpts.commitSnapshot = opts.commit
  return askOpts
}

function conversationOutcome(result: RunResult): HostedRunResult {
  return { kind: "conversation", result }
}

/** {@link startHostedRun} of a runtime agent: its own function, so a conversation's turn never compiles it. */
async function startRuntimeRun(
  store: DurableStore,
  runtime: NonNullable<HostedRunAgent["runtime"]>,
  runId: string,
  input: Prompt,
  opts: StartHostedRunOptions,
): Promise<HostedRunResult> {
  if (typeof input !== "string")
    throw new ConfigError(`run ${runId}: a runtime agent's input must be text (a handle's prompt)`)
  const { root, ...options } = runtime
  const { createRuntime } = await import("@toolnexus/agents")
  const own = options.onEvent
  const listener = opts.onEvent
  const rt = createRuntime({
    ...options,
    store,
    namespace: runId,
    ...(own || listener
      ? {
          onEvent: (ev: RuntimeEvent) => {
            own?.(ev)
            listener?.(ev)
          },
        }
      : {}),
  })
  const onAbort = () => void rt.close(rt.root)
  const signal = opts.abort ?? opts.signal
  signal?.addEventListener("abort", onAbort, { once: true })
  try {
    const handle = rt.spawn(rt.root, root)
    opts.onHandle?.(handle.id)
    rt.wake(handle, input)
    const result = await rt.wait(handle)
    if (result.status === "pending") await saveRuntime(store, runId, rt)
    return { kind: "runtime", result }
  } finally {
    signal?.removeEventListener("abort", onAbort)
  }
}

/**
 * Gives the request a conversation run halted on the caller's deadline (`expiresAt`), so the
 * claim judges it by durable's one expiry rule. The run's own save has just stored the request;
 * nobody can answer it before its caller is told of it, after this. Returns the save to wait
 * for, or undefined when there is nothing to stamp (every turn without a deadline: no promise
 * and no await for it).
 */
export function stampExpiry(
  store: DurableStore,
  runId: string,
  result: RunResult,
  expiresAt: string | undefined,
): Promise<void> | undefined {
  if (expiresAt === undefined || result.status !== "pending" || result.pending === undefined) return undefined
  result.pending = { ...result.pending, expiresAt }
  return store.save(runId, result.messages, { pending: result.pending })
}
