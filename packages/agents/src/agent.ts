import {
  type Answer,
  ConfigError,
  type ConversationStore,
  type Message,
  MemoryStore,
  SchemaVersionError,
  type Request,
  type Tool,
  type ToolContext,
  type ToolResult,
  pending,
  pendingOf,
} from "@toolnexus/core"
import { AGENT_TOOL, type AgentToolSpec } from "./agent-tool.js"
import { DELEGATE, type DelegatingRuntime, createRuntime, restoreRuntime } from "./runtime.js"
import type { RuntimeSnapshot } from "./snapshot.js"
import type { AgentDef, RuntimeOptions, TaskResult } from "./types.js"

/** The level-1 surface: one agent (and its team) runnable in a line. */
export interface Agent {
  /** The agent's definition: its `name` and the options given, without `agents`; register it in a runtime. */
  readonly def: AgentDef
  /** Runs the agent on a fresh runtime; never throws for a failed run (see `status`). */
  run(prompt: string, opts?: Omit<RuntimeOptions, "registry">): Promise<TaskResult>
  /**
   * The agent as a tool (source "agent") taking `{prompt}`. In a runtime's def it runs as a
   * child handle of the caller, exactly as `task` does: its suspensions park the caller and
   * are answered through the caller's runtime (the caller's runtime options apply; `opts` is
   * not used there). Anywhere else (e.g. a plain client's toolkit) it runs on a runtime of
   * its own, made from `opts` and closed once the agent settles; a suspension becomes the
   * call's pending request, which carries the agent's state in `data.agentRun` (so it
   * survives a restart with the caller's store), and the answer given through `continueRun`
   * or `askWithAnswer` resumes it without asking anything again. That runtime keeps its
   * conversations in memory (in the request while suspended): `opts.store` is not used.
   * Under a durable executor (the call's `ctx.executor`) that runtime takes the executor: the
   * agent's turns and calls are steps `tool:<n>:<call id>/<handle id>/…` of the caller's
   * workflow, and a suspension is the engine's wait.
   */
  asTool(opts?: Omit<RuntimeOptions, "registry">): Tool
}

/**
 * Defines an agent; `agents` are the defs its team (and theirs) may use.
 *
 * @example
 * const writer = agent("writer", { does: "writes short answers", model: "gpt-4.1-mini" })
 * const result = await writer.run("Say hi", { llm: { baseUrl } })
 */
export function agent(name: string, opts: Omit<AgentDef, "name"> & { agents?: AgentDef[] }): Agent {
  const { agents = [], ...rest } = opts
  const def: AgentDef = { ...rest, name }
  const registry: Record<string, AgentDef> = { [name]: def }
  for (const a of agents) {
    if (registry[a.name]) throw new ConfigError(`agent ${JSON.stringify(a.name)} is defined twice`)
    registry[a.name] = a
  }
  const run = async (prompt: string, runtimeOpts: Omit<RuntimeOptions, "registry"> = {}) => {
    const rt = createRuntime({ ...runtimeOpts, registry })
    const h = rt.spawn(rt.root, name)
    rt.wake(h, prompt)
    const result = await rt.wait(h)
    if (result.status !== "pending") await rt.close(rt.root)
    return result
  }
  const spec: AgentToolSpec = { def, registry }
  return {
    def,
    run,
    asTool(runtimeOpts = {}) {
      const tool: Tool & { [AGENT_TOOL]: AgentToolSpec } = {
        name,
        description: def.does,
        inputSchema: {
          type: "object",
          properties: { prompt: { type: "string", description: "what to do" } },
          required: ["prompt"],
        },
        source: "agent",
        execute: (args, ctx = {}) => runOwn(name, registry, runtimeOpts, String(args.prompt ?? ""), ctx),
        [AGENT_TOOL]: spec,
      }
      return tool
    },
  }
}

/** The key of an agent tool's state in its pending request's `data`. */
const STATE_KEY = "agentRun"
/**
 * The `data.agentRun` format version this code writes, and the versions it reads. A change to
 * its shape adds a version and a golden file under `test/fixtures/agent-run/`; the runtime
 * snapshot inside carries its own `schemaVersion`, read by `restoreRuntime`.
 */
const STATE_VERSION = 1
const READABLE_STATE_VERSIONS = [1] as const

/** What an agent tool run outside a runtime keeps in its pending request while suspended. */
interface AgentRunState {
  v: number
  snapshot: RuntimeSnapshot
  conversations: { id: string; messages: Message[]; pending?: Request }[]
}

/**
 * An agent tool's call outside a runtime: the agent runs as the only child of a runtime of
 * its own, through the same delegation path as `task` (spawn → wake → wait → close, keyed by
 * the call id). Retried with an answer, the runtime is rebuilt from the state the request
 * carries, the answer resumes the parked agent, and the call reattaches to it.
 */
async function runOwn(
  name: string,
  registry: Record<string, AgentDef>,
  runtimeOpts: Omit<RuntimeOptions, "registry">,
  prompt: string,
  ctx: ToolContext,
): Promise<ToolResult> {
  // Traced, the runtime's runs hang under this call's execute_tool span.
  const parentContext = ctx.traceContext
  const base =
    parentContext === undefined
      ? { ...runtimeOpts }
      : { ...runtimeOpts, telemetry: { ...runtimeOpts.telemetry, parentContext } }
  const state = ctx.answer ? stateIn(ctx.request) : undefined
  if (ctx.answer && !state) {
    return {
      output: `${name}: cannot resume: the answered request carries no agent state (data.${STATE_KEY})`,
      isError: true,
    }
  }
  const store = new MemoryStore()
  let rt: DelegatingRuntime
  if (state) {
    for (const c of state.conversations) await store.save(c.id, c.messages, { pending: c.pending ?? null })
    rt = restoreRuntime(state.snapshot, { ...base, registry, store }) as DelegatingRuntime
    try {
      await rt.resume(ctx.answer as Answer, { signal: ctx.signal })
    } catch (error) {
      return { output: `${name}: ${error instanceof Error ? error.message : String(error)}`, isError: true }
    }
  } else {
    // Under a durable executor the agent's turns and calls are steps of the caller's workflow,
    // and a suspension is the engine's wait (it never parks into the request).
    const journaled = ctx.executor ? { ...base, executor: ctx.executor } : base
    rt = createRuntime({ ...journaled, registry, store }) as DelegatingRuntime
  }
  const result = await rt[DELEGATE](rt.root, name, prompt, ctx)
  const request = pendingOf(result)
  if (!request) {
    await rt.close(rt.root)
    return result
  }
  // Parked: nothing runs, and all the runtime is goes into the request. The halted call is
  // this one (its id, not the leaf's), so the caller's transcript resumes it.
  const data: Record<string, unknown> = { ...request.data, [STATE_KEY]: await stateOf(rt, store) }
  if (ctx.callId !== undefined) data.callId = ctx.callId
  return pending({ ...request, data })
}

async function stateOf(rt: DelegatingRuntime, store: ConversationStore): Promise<AgentRunState> {
  const snapshot = rt.snapshot()
  const conversations: AgentRunState["conversations"] = []
  for (const h of snapshot.handles) {
    const id = rt.conversationId({ id: h.id })
    const messages = await store.get(id)
    if (!messages) continue
    const waiting = await store.getPending?.(id)
    conversations.push(waiting ? { id, messages, pending: waiting } : { id, messages })
  }
  return JSON.parse(JSON.stringify({ v: STATE_VERSION, snapshot, conversations }))
}

/**
 * The agent state a request carries, or `undefined` when it carries none.
 * @throws SchemaVersionError when it carries state of a version this code does not read (a
 *   newer release parked it); a toolkit shows the model its message, which names the versions.
 */
function stateIn(request: Request | undefined): AgentRunState | undefined {
  const state = request?.data?.[STATE_KEY] as AgentRunState | undefined
  if (typeof state !== "object" || state === null) return undefined
  if (!(READABLE_STATE_VERSIONS as readonly unknown[]).includes(state.v))
    throw new SchemaVersionError(
      `the agent state (data.${STATE_KEY}) of request ${JSON.stringify(request?.id)}`,
      state.v,
      READABLE_STATE_VERSIONS,
    )
  if (!Array.isArray(state.conversations) || typeof state.snapshot !== "object") return undefined
  return state
}
