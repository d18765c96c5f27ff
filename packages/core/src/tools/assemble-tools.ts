import { ConfigError } from "../errors.js"
import type { Tool } from "../types.js"

/** A source of tools a toolkit takes in and closes with it, such as a `connectMcp()` connection. */
export interface ToolSet {
  /** The set's tools, read once when `createToolkit` assembles the toolkit. */
  tools(): Tool[]
  /** Releases the set (e.g. its server connection); the toolkit's `close()` calls it when present. */
  close?(): Promise<void>
}

/** @internal The tools of each source, before assembly. */
export interface ToolSources {
  mcp: ToolSet[]
  skill: Tool | undefined
  builtins: Tool[]
  agents: (Tool | { asTool(): Tool })[]
  extraTools: Tool[]
  disableTools: string[]
}

/**
 * @internal Assembles a toolkit's tools in upstream's order: MCP, `skill`, builtins, agents,
 * extraTools. A host tool (agents, extraTools) shadows a builtin of its name; any other duplicate
 * is refused (upstream keeps the first and warns, which hides a misconfiguration). `disableTools`
 * drops by final name from every source.
 *
 * @throws ConfigError naming a duplicate tool or a malformed source.
 */
export function assembleTools(sources: ToolSources): Tool[] {
  const disabled = new Set(sources.disableTools)
  const mcp = sources.mcp.flatMap((set, index) => {
    if (typeof set?.tools !== "function") throw new ConfigError(`mcp[${index}] must have a tools() method`)
    return set.tools()
  })
  const agents = sources.agents.map((entry, index) => {
    if (entry && typeof (entry as { asTool?: unknown }).asTool === "function")
      return (entry as { asTool(): Tool }).asTool()
    if (entry && typeof (entry as Tool).execute === "function") return entry as Tool
    throw new ConfigError(`agents[${index}] must be a tool or have an asTool() method`)
  })
  const hostNames = new Set([...agents, ...sources.extraTools].map((t) => t?.name))
  const builtins = sources.builtins.filter((t) => !hostNames.has(t.name))
  const all = [
    ...mcp,
    ...(sources.skill ? [sources.skill] : []),
    ...builtins,
    ...agents,
    ...sources.extraTools,
  ]
  return all.filter((t) => !disabled.has(t?.name))
}
