import { ConfigError } from "../errors.js"
import type { Answer, Request, Tool, ToolContext, ToolResult } from "../types.js"
import { assertToolName } from "./tool-name.js"
import { isThenable } from "../internal/thenable.js"
import { thrownResult } from "./define-tool.js"
import { type SkillOptions, createSkillSource, hasSkillOptions } from "../skills/skill-tool.js"
import { type ToolSet, assembleTools } from "./assemble-tools.js"
import type { BuiltinsOptions } from "../builtins/builtin-options.js"
import {
  type ApprovalPolicy,
  type ApprovalPolicyHook,
  type GrantLookup,
  type ToolkitApproval,
  assertApprovalPolicy,
  gatedExecute,
  isGated,
} from "./approval-policy.js"

/** A set of uniquely named tools, rendered for each provider's wire format. */
export interface Toolkit {
  /** Every tool, in assembly then registration order; a new array on each call. */
  tools(): Tool[]
  /** The tool of this name, or `undefined` when there is none. */
  get(name: string): Tool | undefined
  /** Adds tools. @throws ConfigError for an invalid or duplicate name. */
  register(...tools: Tool[]): void
  /** Runs a tool by name; an unknown name or a throwing tool gives an `isError` result. */
  execute(name: string, args: Record<string, unknown>, ctx?: ToolContext): Promise<ToolResult>
  /** `[{type:"function", function:{name, description, parameters}}]` */
  toOpenAI(): unknown[]
  /** `[{name, description, input_schema}]` */
  toAnthropic(): unknown[]
  /** `[{functionDeclarations:[{name, description, parameters}]}]` */
  toGemini(): unknown[]
  /**
   * The skill catalog for the system prompt: `""` without skill options, `No skills are currently
   * available.` when no skill has a description, else the preamble and one line per skill by name.
   * The client appends it to `systemPrompt`.
   */
  skillsPrompt(): string
  /** Answers this toolkit's suspensions when the run has no `waitFor` of its own. */
  readonly waitFor?: ((req: Request) => Answer | Promise<Answer>) | undefined
  /** Closes the tool sets given as `mcp` and forgets every tool. */
  close(): Promise<void>
}

/** Options of {@link createToolkit}. Tools are assembled as MCP, `skill`, builtins, agents, extraTools. */
export interface ToolkitOptions extends SkillOptions {
  /** Host tools; one shadows a builtin of its name. */
  extraTools?: Tool[]
  /** Tool sets such as a `connectMcp()` connection (upstream's `mcpConfig`); closed by `close()`. */
  mcp?: ToolSet | ToolSet[]
  /**
   * The built-in tools (bash, read, write, edit, grep, glob, webfetch, question, apply_patch,
   * todowrite), confined to a root, side-effecting calls approved first. Off unless given.
   */
  builtins?: boolean | BuiltinsOptions
  /** Agents as tools: `a2aTool()` tools, `agent()`s of `@toolnexus/agents` (anything with `asTool()`). */
  agents?: (
    | Tool
    | {
        /** The tool that stands for the agent; called once, when the toolkit is created. */
        asTool(): Tool
      }
  )[]
  /** Final tool names dropped from every source, `skill` included; unknown names are ignored. */
  disableTools?: string[]
  /** Answers this toolkit's suspensions when the run has no `waitFor` of its own. */
  waitFor?: (req: Request) => Answer | Promise<Answer>
  /**
   * Which calls suspend for approval (`kind: "approval"`) before they run, on top of each tool's
   * own `needsApproval` (either asking is enough). The rules are those of MCP servers and the
   * builtins, keyed by the tool's source (`"native"`, `"http"`, `"agent"`, …) where they key by
   * server: `true`, `{ http: true, native: ["pay"] }`, `(source, tool, args) => boolean`;
   * `"destructive"` asks for every call (host tools carry no read-only marking). MCP and builtin
   * tools keep their own policy (`requireApproval` of `connectMcp` / `builtins`).
   */
  requireApproval?: ApprovalPolicy
  /**
   * Policy as code for the calls that need approval (by `needsApproval` or `requireApproval`):
   * `"allow"` runs without asking, `"deny"` ⇒ `declined: denied by policy`, `"ask"` suspends.
   * A throw, a rejection or any other value ⇒ `"ask"`. It lives beside `requireApproval`: the
   * toolkit is where a call is gated, whichever client, agent or host runs it.
   */
  approvalPolicy?: ApprovalPolicyHook
}

/**
 * Creates a toolkit. It is async so that tool sources that connect to servers can join later
 * without a breaking change.
 *
 * @throws ConfigError when two tools share a name (a host tool shadowing a builtin aside), for a
 * missing skills folder, a bad `skillSampleLimit` or a bad `builtins` root.
 * @example
 * const toolkit = await createToolkit({ extraTools: [add, relayTool("ask_user", "Ask the user")] })
 */
export async function createToolkit(opts: ToolkitOptions = {}): Promise<Toolkit> {
  if (opts.waitFor !== undefined && typeof opts.waitFor !== "function") {
    throw new ConfigError("waitFor must be a function")
  }
  const approval =
    opts.requireApproval === undefined && opts.approvalPolicy === undefined
      ? undefined
      : toolkitApproval(opts)
  const sets = opts.mcp === undefined ? [] : Array.isArray(opts.mcp) ? opts.mcp : [opts.mcp]
  const skills = hasSkillOptions(opts) ? await createSkillSource(opts) : undefined
  const skillsPrompt = skills ? skills.prompt() : ""
  // Loaded only when asked for: the builtins' code (shell, files, search, fetch) is a fifth of
  // core, and a toolkit without them, the default, never runs it.
  const builtins =
    opts.builtins === undefined || opts.builtins === false
      ? []
      : (await import("../builtins/builtin-tools.js")).createBuiltinTools(opts.builtins)
  const assembled = assembleTools({
    mcp: sets,
    skill: skills?.tool,
    builtins,
    agents: opts.agents ?? [],
    extraTools: opts.extraTools ?? [],
    disableTools: opts.disableTools ?? [],
  })
  const byName = new Map<string, Tool>()
  // Provider renderings are cached: they are sent on every turn of every run.
  let openai: unknown[] | undefined
  let anthropic: unknown[] | undefined

  const toolkit: Toolkit = {
    tools: () => [...byName.values()],
    get: (name) => byName.get(name),
    register(...tools) {
      // Names of this call count too: two same-named tools in one call would otherwise slip
      // past the check and the second would silently replace the first.
      const incoming = new Set<string>()
      for (const tool of tools) {
        assertToolName(tool?.name)
        if (byName.has(tool.name) || incoming.has(tool.name)) {
          throw new ConfigError(`duplicate tool name ${JSON.stringify(tool.name)}`)
        }
        incoming.add(tool.name)
      }
      for (const tool of tools) byName.set(tool.name, tool)
      openai = undefined
      anthropic = undefined
    },
    async execute(name, args, ctx) {
      const tool = byName.get(name)
      if (!tool) return unknownTool(name, [...byName.keys()])
      return executeTool(tool, args, ctx, approval)
    },
    toOpenAI() {
      openai ??= [...byName.values()].map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.inputSchema },
      }))
      return openai
    },
    toAnthropic() {
      anthropic ??= [...byName.values()].map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.inputSchema,
      }))
      return anthropic
    },
    toGemini: () => [
      {
        functionDeclarations: [...byName.values()].map((t) => ({
          name: t.name,
          description: t.description,
          parameters: t.inputSchema,
        })),
      },
    ],
    skillsPrompt: () => skillsPrompt,
    waitFor: opts.waitFor,
    async close() {
      byName.clear()
      openai = undefined
      anthropic = undefined
      await Promise.all(sets.map((set) => set.close?.()))
    },
  }
  toolkit.register(...assembled)
  own.set(toolkit, approval)
  return toolkit
}

/**
 * A toolkit's approval options, checked. Its own function: a toolkit without them (a
 * fresh process's first run) compiles no checker.
 */
function toolkitApproval(opts: ToolkitOptions): ToolkitApproval {
  if (opts.requireApproval !== undefined) assertApprovalPolicy(opts.requireApproval, "requireApproval")
  if (opts.approvalPolicy !== undefined && typeof opts.approvalPolicy !== "function") {
    throw new ConfigError("approvalPolicy must be a function")
  }
  return { requireApproval: opts.requireApproval, approvalPolicy: opts.approvalPolicy }
}

/** Toolkits made by {@link createToolkit}, whose `execute` is {@link executeTool} by name, with their approval options. */
const own = new WeakMap<Toolkit, ToolkitApproval | undefined>()

/**
 * @internal Runs `tool`, found by `toolkit.get`, as `toolkit.execute` would. A toolkit of
 * {@link createToolkit} runs a synchronous tool synchronously: no promise and no tick per call
 * in the loop. Any other `Toolkit` implementation gets its own `execute`.
 */
export function executeIn(
  toolkit: Toolkit,
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext,
  grants?: GrantLookup,
): ToolResult | Promise<ToolResult> {
  return own.has(toolkit)
    ? executeTool(tool, args, ctx, own.get(toolkit), grants)
    : toolkit.execute(tool.name, args, ctx)
}

/**
 * A tool's result; a throw or a rejection becomes an error result. A gated call (§19) passes the
 * approval gate first, whose refusals of a bad approval (typed errors) are not tool failures and
 * reach the caller.
 */
function executeTool(
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext | undefined,
  approval: ToolkitApproval | undefined,
  grants?: GrantLookup,
): ToolResult | Promise<ToolResult> {
  if (isGated(tool, approval))
    return gatedExecute(tool, args, ctx ?? {}, approval, (a, c) => runTool(tool, a, c), grants)
  return runTool(tool, args, ctx)
}

function runTool(
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext | undefined,
): ToolResult | Promise<ToolResult> {
  try {
    const result = tool.execute(args, ctx)
    return isThenable(result) ? Promise.resolve(result).then(undefined, thrownResult) : result
  } catch (error) {
    return thrownResult(error)
  }
}

/** @internal The result the model sees for a tool that does not exist. */
export function unknownTool(name: string, known: string[]): ToolResult {
  const list = known.length ? known.join(", ") : "none"
  return { output: `unknown tool ${JSON.stringify(name)}; available tools: ${list}`, isError: true }
}
