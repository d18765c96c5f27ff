import { ConfigError, type Tool, type ToolContext } from "@toolnexus/core"
import type { HandleRecord } from "./handle-record.js"
import { type TaskHost, delegate } from "./task-tool.js"
import type { AgentDef } from "./types.js"

/** @internal Marks the tool `agent().asTool()` makes, so a runtime can run it as a child handle. */
export const AGENT_TOOL = Symbol.for("toolnexus.agents.agent-tool")

/** @internal What an agent tool stands for: its agent, and the defs that agent's team may use. */
export interface AgentToolSpec {
  readonly def: AgentDef
  readonly registry: Readonly<Record<string, AgentDef>>
}

/** @internal The spec of a tool made by `asTool()`, or undefined for any other tool. */
export function agentToolOf(tool: Tool): AgentToolSpec | undefined {
  return (tool as { [AGENT_TOOL]?: AgentToolSpec })[AGENT_TOOL]
}

/**
 * @internal `registry` with the defs of every agent tool its defs (and theirs) carry, so the
 * runtime can spawn, and a snapshot restore, an agent tool's agent as a child handle.
 *
 * @throws ConfigError when a name stands for two different defs.
 */
export function withAgentTools(registry: Record<string, AgentDef>): Record<string, AgentDef> {
  let out = registry
  const todo: (AgentDef | undefined)[] = Object.values(registry)
  while (todo.length > 0) {
    const def = todo.pop()
    for (const tool of def?.tools ?? []) {
      const spec = agentToolOf(tool)
      if (!spec) continue
      for (const [name, d] of Object.entries(spec.registry)) {
        const known = out[name]
        if (known === d) continue
        if (known) {
          throw new ConfigError(
            `agent ${JSON.stringify(name)} is defined twice: once in the registry (or another agent's tool) and once by ${JSON.stringify(spec.def.name)}.asTool(); give them different names or share one definition`,
          )
        }
        if (out === registry) out = { ...registry }
        out[name] = d
        todo.push(d)
      }
    }
  }
  return out
}

/**
 * @internal An agent tool as a handle of `parent` runs it: its agent is spawned as `parent`'s
 * child through the task tool's delegation path, so its suspensions park the caller like
 * `task`'s do and a retry reattaches to it by task key.
 */
export function childAgentTool(host: TaskHost, parent: HandleRecord, tool: Tool, spec: AgentToolSpec): Tool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    source: "agent",
    execute: (args, ctx: ToolContext = {}) =>
      delegate(host, parent, spec.def.name, String(args.prompt ?? ""), ctx),
  }
}
