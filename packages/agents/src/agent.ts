import { ConfigError, type Tool } from "@toolnexus/core"
import { createRuntime } from "./runtime.js"
import type { AgentDef, RuntimeOptions, TaskResult } from "./types.js"

/** The level-1 surface: one agent (and its team) runnable in a line. */
export interface Agent {
  readonly def: AgentDef
  /** Runs the agent on a fresh runtime; never throws for a failed run (see `status`). */
  run(prompt: string, opts?: Omit<RuntimeOptions, "registry">): Promise<TaskResult>
  /** The agent as a tool (source "agent") taking `{prompt}`. */
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
  return {
    def,
    run,
    asTool(runtimeOpts) {
      return {
        name,
        description: def.does,
        inputSchema: {
          type: "object",
          properties: { prompt: { type: "string", description: "what to do" } },
          required: ["prompt"],
        },
        source: "agent",
        async execute(args, ctx) {
          // Traced, the nested runtime's runs hang under this call's execute_tool span.
          const parentContext = ctx?.traceContext
          const opts =
            parentContext === undefined
              ? runtimeOpts
              : { ...runtimeOpts, telemetry: { ...runtimeOpts?.telemetry, parentContext } }
          const result = await run(String(args.prompt ?? ""), opts)
          return { output: result.text, isError: result.isError || result.status !== "done" }
        },
      }
    },
  }
}
