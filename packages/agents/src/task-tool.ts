import { ToolnexusError, type Tool, type ToolContext, type ToolResult, pending } from "@toolnexus/core"
import type { HandleRecord } from "./handle-record.js"
import type { AgentDef, Handle, TaskResult } from "./types.js"

/** @internal The runtime surface the task tool drives a child through. */
export interface TaskHost {
  /** Spawns a child of `parent` for the `task` call `taskKey` (its tool-call id). */
  spawnForTask(parent: HandleRecord, defName: string, taskKey: string | undefined): HandleRecord
  /** Adds a line to the runtime trace. */
  note(line: string): void
  wake(h: Handle, prompt?: string): void
  wait(h: Handle): Promise<TaskResult>
  close(h: Handle): Promise<void>
  interrupt(h: Handle): void
}

/**
 * @internal The `task {agent, prompt}` tool of a def with a team: spawn → wake → wait →
 * close. A retried call (after a suspension was answered, or on resume) reattaches to the
 * child it created, found by task key — the call's own tool-call id — so it never spawns a
 * duplicate and never asks the model again.
 */
export function createTaskTool(
  host: TaskHost,
  parent: HandleRecord,
  registry: Record<string, AgentDef>,
): Tool {
  const team = [...(parent.def.team ?? [])].sort()
  const roster = team.map((name) => `- ${name}: ${registry[name]?.does ?? ""}`).join("\n")
  return {
    name: "task",
    description: `Delegate a task to one agent of your team and get its answer. Team:\n${roster}`,
    inputSchema: {
      type: "object",
      properties: {
        agent: { type: "string", enum: team, description: "the team member to delegate to" },
        prompt: { type: "string", description: "what the agent should do, with all context it needs" },
      },
      required: ["agent", "prompt"],
    },
    source: "agent",
    async execute(args, ctx = {}) {
      const agent = String(args.agent ?? "")
      if (!team.includes(agent)) {
        return {
          output: `unknown team member ${JSON.stringify(agent)}; the team is: ${team.join(", ")}`,
          isError: true,
        }
      }
      return delegate(host, parent, agent, String(args.prompt ?? ""), ctx)
    },
  }
}

/**
 * @internal The one delegation path, shared by `task` and an agent's `asTool()`: spawn →
 * wake → wait → close a child of `parent` for the call `ctx.callId`. A retried call (after a
 * suspension was answered, or on resume) reattaches to the child it created, found by task
 * key — the call's own tool-call id — so it never spawns a duplicate and never asks the
 * model again. A suspended child's request becomes this call's pending request.
 */
export async function delegate(
  host: TaskHost,
  parent: HandleRecord,
  agent: string,
  prompt: string,
  ctx: ToolContext,
): Promise<ToolResult> {
  let child = ctx.callId ? parent.children.find((c) => c.taskKey === ctx.callId) : undefined
  if (child) host.note(`${parent.id}: task replay → REATTACH to ${child.id}`)
  else {
    try {
      child = host.spawnForTask(parent, agent, ctx.callId)
      child.traceParent = ctx.traceContext
      host.wake(child.handle, prompt)
    } catch (error) {
      // Errors cross the handle boundary as data.
      return { output: ToolnexusError.isInstance(error) ? error.message : String(error), isError: true }
    }
  }
  const handle = child.handle
  const onAbort = () => host.interrupt(handle)
  ctx.signal?.addEventListener("abort", onAbort, { once: true })
  try {
    const result = await host.wait(handle)
    if (result.status === "pending" && result.pending) return pending({ ...result.pending })
    if (child.state !== "closed") await host.close(handle)
    return taskOutput(child.id, result)
  } finally {
    ctx.signal?.removeEventListener("abort", onAbort)
  }
}

function taskOutput(id: string, result: TaskResult): ToolResult {
  switch (result.status) {
    case "done":
      return { output: result.text, isError: false }
    case "incomplete":
      return {
        output: `${id} stopped early (limit: ${result.limit ?? "unknown"}); partial answer: ${result.text}`,
        isError: false,
      }
    default:
      return {
        output: `${id} ended with status ${result.status}${result.text ? `: ${result.text}` : ""}`,
        isError: true,
      }
  }
}
