import {
  ConfigError,
  type ConversationStore,
  type GenerateReply,
  type GenerateRequest,
  type HostAgent,
  type HostAgentOptions,
  type Tool,
  createInProcessClient,
  createToolkit,
  hostAgent,
} from "@toolnexus/core"

/** Prefix of the hosted agent that runs a plain tool served by `createMcpServer({ tools })`. */
const TOOL_AGENT_PREFIX = "tool-"
const AGENT_NAME_MAX = 64
/** The "model" of a tool's run: no model at all, so results and metrics say so. */
const NO_MODEL = "toolnexus.tool-call"

/** Options of {@link hostedToolAgents}. */
export interface HostedToolAgentsOptions {
  /**
   * The host's store (`createStoreHost({ store })`): a hosted client run keeps its conversation
   * there. Leave it out for an engine host (`connectRestate`, `connectDbos`), which keeps its own.
   */
  store?: ConversationStore
}

/**
 * A hosted agent that runs one tool: a client run (no `runtime`), so it fits every host's
 * agent list (`createStoreHost`, `connectRestate`, `connectDbos`).
 */
export type ToolAgent = HostAgent<HostAgentOptions<never>>

/** The hosted agent name that runs `toolName` (`tool-<name>`). @internal */
export function toolAgentName(toolName: string): string {
  return `${TOOL_AGENT_PREFIX}${toolName}`
}

/**
 * The hosted agents behind `createMcpServer({ tools })`: one per tool, named `tool-<name>`,
 * whose run has no model — its only step is the call itself, with the MCP call's arguments. So
 * the call runs through the host like an agent's: an approval (`needsApproval`, a toolkit
 * policy) or any other suspension parks the run durably in the host's store, is answered from
 * any door (MCP `input_required`, an inbox, the CLI) by any process, and the tool runs once.
 * Give the same tools to the host (these agents) and to `createMcpServer`.
 *
 * @param tools - Plain toolnexus tools (`defineTool`, `httpTool`, …).
 * @param opts - {@link HostedToolAgentsOptions}.
 * @returns One `HostAgent` per tool, for `createStoreHost({ agents })` or an engine.
 * @throws ConfigError for a tool listed twice, or a name too long for its agent (over 59 characters).
 * @example
 * const host = createStoreHost({ store, agents: [...(await hostedToolAgents([deploy], { store }))] })
 * const mcp = createMcpServer({ host, tools: [deploy], name: "ops", version: "1.0.0", stateKeys })
 */
export async function hostedToolAgents(
  tools: readonly Tool[],
  opts: HostedToolAgentsOptions = {},
): Promise<ToolAgent[]> {
  assertTools(tools, "hostedToolAgents")
  const agents: ToolAgent[] = []
  for (const tool of tools) {
    const client = createInProcessClient({
      model: NO_MODEL,
      ...(opts.store ? { store: opts.store } : {}),
      generate: async (req) => callOnce(tool.name, req),
    })
    const toolkit = await createToolkit({ extraTools: [tool] })
    agents.push(hostAgent({ name: toolAgentName(tool.name), client, toolkit }))
  }
  return agents
}

/** Checks a `tools` list: tools with names, none twice, each name fit for its agent. @internal */
export function assertTools(tools: readonly Tool[], where: string): void {
  if (!Array.isArray(tools)) throw new ConfigError(`${where}: tools must be an array of tools`)
  const seen = new Set<string>()
  for (const tool of tools) {
    if (typeof tool?.name !== "string" || typeof tool.execute !== "function")
      throw new ConfigError(`${where}: every entry of tools must be a tool (defineTool, httpTool, …)`)
    if (seen.has(tool.name)) throw new ConfigError(`${where}: tools lists ${tool.name} twice`)
    seen.add(tool.name)
    if (toolAgentName(tool.name).length > AGENT_NAME_MAX)
      throw new ConfigError(
        `${where}: tool name ${tool.name} is too long to be served (at most ${AGENT_NAME_MAX - TOOL_AGENT_PREFIX.length} characters)`,
      )
  }
}

/**
 * The whole "model" of a tool's run: the first turn calls the tool with the arguments the run
 * was started with (JSON text); the turn after the call answers with the call's output.
 */
function callOnce(name: string, req: GenerateRequest): GenerateReply {
  const last = req.messages[req.messages.length - 1] as { role?: string; content?: unknown } | undefined
  if (last?.role === "tool") return { content: textOf(last.content) }
  const first = req.messages.find((m) => (m as { role?: string }).role === "user") as
    | { content?: unknown }
    | undefined
  return { toolCalls: [{ id: "call-1", name, arguments: textOf(first?.content) || "{}" }] }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content
  if (Array.isArray(content))
    return content
      .map((part) => (typeof part?.text === "string" ? part.text : ""))
      .filter((text) => text !== "")
      .join("\n")
  return content === undefined || content === null ? "" : JSON.stringify(content)
}
