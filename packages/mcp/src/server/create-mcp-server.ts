import { randomUUID } from "node:crypto"
import {
  CLIENT_CAPABILITIES_META_KEY,
  type CallToolResult,
  McpServer,
  type McpServerFactory,
  PROTOCOL_VERSION_META_KEY,
  type ServerContext,
  createMcpHandler,
  fromJsonSchema,
  inputRequired,
  isInputRequiredResult,
  isJsonContentType,
  isLegacyRequest,
  localhostAllowedHostnames,
  validateHostHeader,
  validateOriginHeader,
} from "@modelcontextprotocol/server"
import { serveStdio } from "@modelcontextprotocol/server/stdio"
import {
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  ConfigError,
  HostUnsupportedError,
  type RunHost,
  type Request as RunRequest,
  type RuntimeEvent,
  type StreamEvent,
  type Tool,
  UnknownRequestError,
  isToolnexusError,
} from "@toolnexus/core"
import { isPlainObject } from "../config.js"
import { isObjectSchema } from "../input-schema.js"
import { assertTools, toolAgentName } from "./hosted-tools.js"
import { answerOf, canAsk, elicitationSupport, inputRequestsOf } from "./input-requests.js"
import { RequestStateSealer, type SealedRunState, type SealedTask } from "./request-state.js"
import { type RunState, endedByEvent, runStateOf } from "./run-state.js"
import { type McpSessionOptions, createLegacySessions, rpcError } from "./sessions.js"
import {
  TASKS_EXTENSION,
  type TaskContext,
  claimedOrGone,
  createTask,
  registerTaskHandlers,
  tasksOffered,
} from "./tasks.js"

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** The host every call runs through (`createStoreHost`, `connectRestate`, `connectDbos`). */
  host: RunHost
  /** The hosted agents served, each as an MCP tool of the same name taking `{prompt: string}`. */
  agents?: string[]
  /**
   * Plain tools served as MCP tools of the same names and schemas. Each call is a model-less
   * hosted run of agent `tool-<name>` whose only step is the call, so `host` must serve the
   * agents `hostedToolAgents` makes of the same tools: an approval-gated tool
   * (`needsApproval`) parks durably and answers `input_required` like an agent.
   */
  tools?: Tool[]
  /** The server's name, as MCP clients show it. */
  name: string
  /** The server's version. */
  version: string
  /**
   * Secrets (each at least 32 bytes; a string counts its UTF-8 bytes) the `requestState` of an
   * `input_required` answer is sealed with (AES-256-GCM under an HKDF-derived key): the first
   * seals, every one opens, so a new key goes first and an old one stays until its states expire.
   * Every server instance that may take a retry needs them.
   */
  stateKeys: (string | Uint8Array)[]
  /**
   * Who is calling: a principal string (states are sealed for it and refused to anyone else), or
   * a `Response` to answer with instead (a 401, say). Absent: every HTTP caller is `"anonymous"`.
   * Stdio callers are `"stdio"`.
   */
  authenticate?: (req: Request) => string | Response | Promise<string | Response>
  /**
   * Hostnames the `Host` header (and an `Origin`, when sent) may name: DNS-rebinding
   * protection. Default: `localhost`, `127.0.0.1`, `[::1]`.
   */
  allowedHosts?: string[]
  /** How long a sealed `requestState` (or task id) may be echoed back, in ms; default 24 hours. */
  stateTtlMs?: number
  /**
   * Serve the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): to a 2026-07-28
   * request that declares it, a hosted call still running after this many ms answers with a
   * task instead (`tasks/get` for its status, result or input requests, `tasks/update` to
   * answer them, `tasks/cancel`); a run that ends or parks within it answers in-band (its
   * result, or `input_required`, whose retry is a task when the resumed run outlives it). The
   * task's TTL is `stateTtlMs`; its id is sealed like a state, so any instance answers for it.
   * Absent: no tasks.
   */
  taskAfterMs?: number
  /**
   * 2025-11-25 clients that `initialize` over HTTP get a session (`Mcp-Session-Id`): the
   * capabilities they declared hold for their later requests, elicitation and sampling are
   * asked on the session's stream, `resources/subscribe` can be served. Sessions live in the
   * process that opened them (route a 2025 client back to the same instance: sticky), bound to
   * the principal that opened them; unknown, ended or another principal's ids answer 404.
   * Bounded in all (`max`, 503 beyond) and per authenticated principal (`maxPerPrincipal`, 429).
   * 2026-07-28 is stateless and needs none of this.
   */
  sessions?: McpSessionOptions
  /**
   * Registers resources, prompts and completions on each official `McpServer` instance: one
   * per 2026-07-28 HTTP request, one per 2025-11-25 session (or session-less request), one per
   * stdio connection, and one at construction (to fail early). A handler here that pushes a
   * request to a 2025-11-25 client (`ctx.mcpReq.elicitInput`) should pass
   * `{ relatedRequestId: ctx.mcpReq.id }`: the SDK otherwise sends it on the session's
   * standalone GET stream and drops it when the client has not opened one, and the call never
   * returns. Returning `inputRequired(...)` works on every revision and needs neither.
   */
  configure?: (server: McpServer) => void
}

/** An MCP server over a host: serve it over streamable HTTP (`fetch`) or stdio. */
export interface ToolnexusMcpServer {
  /**
   * Serves one HTTP request (MCP streamable HTTP, 2026-07-28 stateless and 2025-11-25 through
   * `initialize`, with a session in this process); mount it with `toNodeListener` or on any
   * fetch-style runtime.
   */
  fetch(req: Request): Promise<Response>
  /** Serves MCP over this process's stdin and stdout. */
  connectStdio(): Promise<void>
  /** Stops serving (in-flight exchanges are aborted; the host's runs go on). */
  close(): Promise<void>
}

/** Bodies are small JSON-RPC messages; one beyond this is refused (413) before it is parsed. */
const MAX_BODY_BYTES = 1024 * 1024
const DEFAULT_STATE_TTL_MS = 24 * 60 * 60 * 1000
const ANONYMOUS = "anonymous"
const STDIO = "stdio"
const PRINCIPAL = "toolnexus.principal"
const AGENT_INPUT = fromJsonSchema<{ prompt: string }>({
  type: "object",
  properties: { prompt: { type: "string", description: "What to ask the agent" } },
  required: ["prompt"],
})

/**
 * Serves hosted agents to MCP clients (Claude, ChatGPT, VS Code, Cursor, …) on the official v2
 * server: each agent is a tool taking `{prompt}`, run through `host`. A run that parks on
 * requests answers the call with `input_required` — one input request per open request and a
 * sealed `requestState` naming the run, the requests, the principal and an expiry (never the
 * transcript); the client's retry delivers each response once through `host.deliverAnswer`
 * and gets the run's next state. Any server instance over the same host (and keys) takes the
 * retry. A client that cannot elicit gets an `isError` result naming the open request, which
 * stays answerable from any other door.
 *
 * @param opts - {@link McpServerOptions}.
 * @returns `{ fetch, connectStdio, close }`.
 * @throws ConfigError for a missing or short state key, a missing host, an agent listed twice,
 *   or a `configure` that throws (e.g. a tool named like an agent).
 * @example
 * const mcp = createMcpServer({ host, agents: ["support"], name: "support", version: "1.0.0",
 *   stateKeys: [process.env.MCP_STATE_KEY!],
 *   authenticate: (req) => principalOfBearer(req.headers.get("authorization")) ?? new Response(null, { status: 401 }) })
 * createServer(toNodeListener(mcp.fetch)).listen(3000)
 */
export function createMcpServer(opts: McpServerOptions): ToolnexusMcpServer {
  const { host, agents = [], tools = [], name, version, configure, authenticate } = opts
  if (host === undefined || typeof host.start !== "function" || typeof host.deliverAnswer !== "function")
    throw new ConfigError(
      "createMcpServer: host must be a RunHost (createStoreHost, connectRestate, connectDbos)",
    )
  if (typeof name !== "string" || name === "" || typeof version !== "string" || version === "")
    throw new ConfigError("createMcpServer: name and version must be non-empty strings")
  if (new Set(agents).size !== agents.length)
    throw new ConfigError(`createMcpServer: agents lists a name twice (${agents.join(", ")})`)
  assertTools(tools, "createMcpServer")
  for (const tool of tools)
    if (agents.includes(tool.name))
      throw new ConfigError(`createMcpServer: ${tool.name} is listed both as an agent and as a tool`)
  const sealer = new RequestStateSealer(opts.stateKeys)
  const stateTtlMs = opts.stateTtlMs ?? DEFAULT_STATE_TTL_MS
  if (!(Number.isInteger(stateTtlMs) && stateTtlMs > 0))
    throw new ConfigError("createMcpServer: stateTtlMs must be a positive integer")
  const refuseHost = hostGuard(opts.allowedHosts ?? localhostAllowedHostnames())
  const { taskAfterMs } = opts
  if (taskAfterMs !== undefined && !(Number.isInteger(taskAfterMs) && taskAfterMs >= 0))
    throw new ConfigError("createMcpServer: taskAfterMs must be a non-negative integer")

  // Each tool's input schema compiled once here, not per request's server instance.
  const toolEntries = tools.map((tool) => ({ tool, inputSchema: fromJsonSchema(toolInputSchema(tool)) }))
  const factory =
    (fixedPrincipal?: string): McpServerFactory =>
    (ctx) => {
      const principal = fixedPrincipal ?? principalOf(ctx.authInfo?.extra)
      const server = new McpServer(
        { name, version },
        {
          capabilities: {
            tools: {},
            ...(taskAfterMs !== undefined ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
          },
          // Runs before any handler: a state that does not open (tampered, expired, another
          // principal, no current key) is the SDK's -32602, and nothing is delivered. A
          // configure'd handler gets its own state back as it returned it.
          requestState: {
            verify: (wire) => {
              const opened = sealer.open(wire, { principal })
              return "state" in opened ? opened.state : opened
            },
          },
        },
      )
      const tasks: TaskContext | undefined =
        taskAfterMs === undefined ? undefined : { host, sealer, principal, ttlMs: stateTtlMs, era: ctx.era }
      const served: Served = { host, sealer, stateTtlMs, principal, era: ctx.era, server, taskAfterMs, tasks }
      // The extension is 2026-07-28's: a 2025-11-25 instance keeps that revision's own methods.
      if (tasks && ctx.era === "modern") registerTaskHandlers(server, tasks)
      for (const agent of agents)
        server.registerTool(
          agent,
          { description: `Runs the ${agent} agent on a prompt`, inputSchema: AGENT_INPUT },
          (args, callCtx) => callHosted(served, { tool: agent, agent, input: () => args.prompt }, callCtx),
        )
      for (const { tool, inputSchema } of toolEntries)
        server.registerTool(tool.name, { description: tool.description, inputSchema }, (args, callCtx) =>
          callHosted(
            served,
            {
              tool: tool.name,
              agent: toolAgentName(tool.name),
              // Encoded only when it starts a run: a retry (its state given) needs no input.
              input: () => JSON.stringify(args ?? {}),
              plain: true,
            },
            callCtx,
          ),
        )
      if (configure) {
        sealHandlerStates(server, sealer, principal, stateTtlMs)
        configure(server)
      }
      return server
    }

  // One instance now, so that a `configure` that throws (a tool named like an agent, say) fails
  // here rather than on every request.
  try {
    void factory(ANONYMOUS)({ era: "modern" })
  } catch (error) {
    throw new ConfigError(
      `createMcpServer: configure failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    )
  }
  // 2026-07-28 here, statelessly; 2025-11-25 through sessions (and statelessly without one).
  const handler = createMcpHandler(factory(), { legacy: "reject", maxRequestBodySize: MAX_BODY_BYTES })
  const sessions = createLegacySessions(factory(), { ...opts.sessions, maxBodyBytes: MAX_BODY_BYTES })
  let stdio: { close(): Promise<void> } | undefined

  return {
    async fetch(req) {
      const refused = refuseHost(req)
      if (refused) return refused
      let principal = ANONYMOUS
      if (authenticate) {
        let who: string | Response
        try {
          who = await authenticate(req)
        } catch {
          // The hook's failure stays here: its message may hold a token or a secret.
          return jsonError(500, "TNX_INTERNAL", "authentication failed")
        }
        if (who instanceof Response) return who
        if (typeof who !== "string" || who === "")
          return jsonError(500, "TNX_INTERNAL", "authenticate returned no principal")
        principal = who
      }
      const authInfo = { token: "", clientId: principal, scopes: [], extra: { [PRINCIPAL]: principal } }
      // The body is read once, bounded, for both the era's routing and the serving.
      let parsedBody: unknown
      if (req.method.toUpperCase() === "POST") {
        const body = await readJsonBody(req)
        if (body instanceof Response) return body
        // Empty or not JSON: the 2025 leg answers it (a parse error), as the SDK routes it.
        if (!("parsed" in body)) {
          const again = new Request(req.url, {
            method: "POST",
            headers: req.headers,
            body: body.text,
            signal: req.signal,
          })
          return sessions.fetch(again, { principal, authInfo, anonymous: !authenticate })
        }
        parsedBody = body.parsed
      }
      if (
        claimsModernEnvelope(parsedBody) ||
        !(await isLegacyRequest(req, parsedBody, { maxRequestBodySize: MAX_BODY_BYTES }))
      )
        return handler.fetch(req, { authInfo, parsedBody })
      return sessions.fetch(req, { principal, authInfo, parsedBody, anonymous: !authenticate })
    },
    async connectStdio() {
      stdio ??= serveStdio(factory(STDIO))
    },
    async close() {
      await handler.close()
      await sessions.close()
      await stdio?.close()
    },
  }
}

/**
 * Handlers registered through `configure` (tools, prompts, resources) have the `requestState`
 * of their `input_required` answers sealed like the agents' (principal, expiry), so a retry
 * with a tampered or foreign state is refused before they run, and they read back their own.
 */
function sealHandlerStates(
  server: McpServer,
  sealer: RequestStateSealer,
  principal: string,
  ttlMs: number,
): void {
  const sealing =
    (callback: (...args: unknown[]) => unknown) =>
    async (...args: unknown[]): Promise<unknown> => {
      const result = await callback(...args)
      if (!isInputRequiredResult(result) || typeof result.requestState !== "string") return result
      const requestState = sealer.seal({
        state: result.requestState,
        principal,
        expiresAt: Date.now() + ttlMs,
      })
      return { ...result, requestState }
    }
  for (const method of ["registerTool", "registerPrompt", "registerResource"] as const) {
    const register = (server[method] as (...args: unknown[]) => unknown).bind(server)
    // The callback is the last argument of each of the three.
    ;(server as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      const last = args.length - 1
      if (typeof args[last] === "function") args[last] = sealing(args[last] as (...a: unknown[]) => unknown)
      return register(...args)
    }
  }
}

/** What one server instance's tool handlers share. */
interface Served {
  host: RunHost
  sealer: RequestStateSealer
  stateTtlMs: number
  principal: string
  era: "legacy" | "modern"
  server: McpServer
  taskAfterMs: number | undefined
  tasks: TaskContext | undefined
}

/** One served MCP tool's call: which MCP tool, which hosted agent runs it, on what input. */
interface HostedCall {
  /** The MCP tool name (a sealed state is good for this tool only). */
  tool: string
  /** The hosted agent that runs it. */
  agent: string
  /** The run's input, made when a run starts: an agent's prompt, or a plain tool's arguments as JSON. */
  input: () => string
  /** A plain tool's model-less run: its result is the call's output, an error when the call's was. */
  plain?: boolean
}

async function callHosted(served: Served, call: HostedCall, ctx: ServerContext): Promise<CallToolResult> {
  const state = ctx.mcpReq.requestState<SealedRunState | SealedTask | string>()
  try {
    if (state === undefined) {
      const runId = `mcp-${randomUUID()}`
      try {
        await startRun(served.host, call.agent, runId, call.input(), progressOf(ctx))
      } catch (error) {
        if (call.plain && ConfigError.isInstance(error))
          return errorResult(
            `the host refused to run tool ${call.tool} (${error.code}): it must serve hostedToolAgents() of the same tools`,
          )
        throw error
      }
      // Awaited here so that its failure is caught below, not passed to the SDK as is.
      return await answerWith(served, call, runId, ctx)
    }
    // The verify hook has opened it (a string is a configure'd handler's state). A state is
    // good for a retry of its own tool only; the SDK makes a throw here an isError result.
    if (typeof state === "string" || "task" in state || state.tool !== call.tool)
      return errorResult(`this requestState is not for ${call.tool}; nothing was delivered`)
    // How the last delivery's resumed run ended, when it did and said so (see below).
    let ended: RunState | undefined
    for (const request of state.requests) {
      const answer = answerOf(request, ctx.mcpReq.inputResponses)
      if (answer === undefined) continue
      ended = undefined
      // A delivery resolves when the resumed run settles. With tasks, that run may outlive
      // taskAfterMs and become one: wait only until the answer is claimed (a refusal still
      // comes first), then answer with its state as of taskAfterMs.
      const tasks = served.tasks !== undefined && tasksOffered(served.era, ctx)
      const progress = progressOf(ctx)
      // A plain tool's run is a model-less conversation of one call, whose last event (`done`,
      // after its save) is its result: an ended run answers from it, not from a read of the
      // result and transcript back from the host. A host that streams no events answers as before.
      const onEvent: OnEvent | undefined =
        call.plain && !tasks
          ? (ev) => {
              if (ev.type === "done") ended = endedByEvent(ev, true)
              else progress?.(ev)
            }
          : progress
      const delivery = deliver(served.host, answer, onEvent)
      if (tasks) delivery.catch(() => {})
      try {
        await (tasks ? Promise.race([delivery, claimedOrGone(served.host, request.id)]) : delivery)
      } catch (error) {
        ended = undefined
        // Delivered before (the first response was lost) or already consumed: the run's current
        // state answers; the first decision stands.
        if (AnswerConflictError.isInstance(error) || UnknownRequestError.isInstance(error)) continue
        if (AnswerExpiredError.isInstance(error) || AnswerInvalidError.isInstance(error))
          return errorResult(`request ${request.id} was not answered: ${error.message}`)
        throw error
      }
    }
    return await answerWith(served, call, state.runId, ctx, ended)
  } catch (error) {
    return errorResult(safeMessage(error))
  }
}

/**
 * Starts the run, with its events as progress when asked for; a host whose runs stream
 * elsewhere (an engine) refuses `onEvent`, and the run starts without it (a started run id is
 * that run, so the second start starts nothing twice).
 */
async function startRun(
  host: RunHost,
  agent: string,
  runId: string,
  prompt: string,
  onEvent?: OnEvent,
): Promise<void> {
  if (onEvent === undefined) {
    await host.start(agent, runId, prompt)
    return
  }
  try {
    await host.start(agent, runId, prompt, { onEvent })
  } catch (error) {
    if (!HostUnsupportedError.isInstance(error)) throw error
    await host.start(agent, runId, prompt)
  }
}

/** Delivers `answer`, with progress as {@link startRun} does. */
async function deliver(
  host: RunHost,
  answer: Parameters<RunHost["deliverAnswer"]>[0],
  onEvent?: OnEvent,
): Promise<void> {
  if (onEvent === undefined) {
    await host.deliverAnswer(answer)
    return
  }
  try {
    await host.deliverAnswer(answer, { onEvent })
  } catch (error) {
    if (!HostUnsupportedError.isInstance(error)) throw error
    await host.deliverAnswer(answer)
  }
}

type OnEvent = (ev: StreamEvent | RuntimeEvent) => void

/** The run's next state (`known`, or the host's) as the call's answer: its result, or `input_required`. */
async function answerWith(
  served: Served,
  call: HostedCall,
  runId: string,
  ctx: ServerContext,
  known?: RunState,
): Promise<CallToolResult> {
  let state: RunState
  if (known !== undefined) state = known
  else if (served.tasks && tasksOffered(served.era, ctx)) {
    const soon = await stateWithin(served, runId, call, ctx, served.taskAfterMs ?? 0)
    // Still running after taskAfterMs: a task the client polls (and answers, should it park
    // later). What is known within taskAfterMs (the result, or the questions of a run that
    // parked) answers in-band, so a call that asks first and works long after its answer is
    // input_required, then a task on the retry (SEP-2663's MRTR-then-task composition).
    if (soon === undefined) return createTask(served.tasks, call.tool, runId)
    state = soon
  } else state = await runStateOf(served.host, runId, ctx.mcpReq.signal, { plain: call.plain === true })
  if (state.kind === "ended") {
    const text = state.text !== "" ? state.text : `(the run ended: ${state.status})`
    return { content: [{ type: "text", text }], isError: state.isError }
  }
  const support = elicitationSupport(clientCapabilitiesOf(served, ctx))
  const unaskable = state.requests.filter((request) => !canAsk(request, support))
  if (unaskable.length > 0) return cannotAsk(runId, unaskable)
  const requestState = served.sealer.seal({
    tool: call.tool,
    runId,
    requests: state.requests.map(({ id, kind }) => ({ id, kind })),
    principal: served.principal,
    expiresAt: Date.now() + served.stateTtlMs,
  })
  return inputRequired({
    inputRequests: inputRequestsOf(state.requests),
    requestState,
  }) as unknown as CallToolResult
}

/** The run's state if it ends or parks within `ms`, else undefined (it goes on). */
async function stateWithin(
  served: Served,
  runId: string,
  call: HostedCall,
  ctx: ServerContext,
  ms: number,
): Promise<RunState | undefined> {
  const stop = new AbortController()
  const abort = () => stop.abort()
  ctx.mcpReq.signal.addEventListener("abort", abort, { once: true })
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, ms, undefined)
    })
    return await Promise.race([
      runStateOf(served.host, runId, stop.signal, { plain: call.plain === true }),
      late,
    ])
  } finally {
    clearTimeout(timer)
    stop.abort()
    ctx.mcpReq.signal.removeEventListener("abort", abort)
  }
}

/** The capabilities this call's client declared: per request on 2026-07-28, at `initialize` before. */
function clientCapabilitiesOf(served: Served, ctx: ServerContext): unknown {
  if (served.era === "modern")
    return (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY]
  return served.server.server.getClientCapabilities()
}

function cannotAsk(runId: string, requests: RunRequest[]): CallToolResult {
  const list = requests.map((r) => `${r.id} (${r.kind}: ${r.prompt})`).join("; ")
  return errorResult(
    `run ${runId} waits on ${list}; this client cannot answer it here (no elicitation support), ` +
      "answer it from another door (an approvals inbox, chat, or the toolnexus CLI)",
  )
}

/** Run events as progress notifications, when the call carries a progress token. */
function progressOf(ctx: ServerContext): OnEvent | undefined {
  const progressToken = ctx.mcpReq._meta?.progressToken
  if (progressToken === undefined) return undefined
  let progress = 0
  return (ev) => {
    if (ev.type !== "tool_call" && ev.type !== "turn" && ev.type !== "pending") return
    progress++
    const message =
      ev.type === "tool_call"
        ? `calling ${ev.name}`
        : ev.type === "turn"
          ? `turn ${ev.turn}`
          : "waiting for an answer"
    ctx.mcpReq
      .notify({ method: "notifications/progress", params: { progressToken, progress, message } })
      .catch(() => {})
  }
}

/** A tool's input schema as MCP wants it: an object schema (a tool without one takes `{}`). */
/**
 * A served tool's schema, listed and validated as written (`$schema`, `$defs`, `$ref`,
 * `if`/`then`/`else`, …): one that leaves `type: "object"` implied by its keywords gets it
 * added (MCP lists object schemas only) rather than being replaced by an empty one, which would
 * hide its parameters from the client and skip the call's validation.
 */
function toolInputSchema(tool: Tool): Record<string, unknown> {
  const schema: unknown = tool.inputSchema
  if (isPlainObject(schema) && isObjectSchema(schema))
    return schema.type === "object" ? schema : { ...schema, type: "object" }
  return { type: "object", properties: {} }
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true }
}

/** A failure's text for the wire: a toolnexus error's code, never a stack, transcript or secret. */
function safeMessage(error: unknown): string {
  if (isToolnexusError(error)) return `the run failed (${error.code})`
  return "the run failed (internal error)"
}

function principalOf(extra: Record<string, unknown> | undefined): string {
  const principal = extra?.[PRINCIPAL]
  return typeof principal === "string" ? principal : ANONYMOUS
}

/**
 * A POST's body, read once within {@link MAX_BODY_BYTES}: parsed JSON, or its text when it is
 * empty or not JSON, or the refusal (415 before reading a body not declared JSON, as the SDK's
 * entry does; 413; 400).
 */
async function readJsonBody(req: Request): Promise<{ parsed: unknown } | { text: string } | Response> {
  if (!isJsonContentType(req.headers.get("content-type")))
    return rpcError(415, -32000, "Unsupported Media Type: Content-Type must be application/json")
  let text: string
  try {
    const read = await readBodyText(req, MAX_BODY_BYTES)
    if (read === undefined) return rpcError(413, -32000, "the request body is too large")
    text = read
  } catch {
    return rpcError(400, -32700, "Parse error: the request body could not be read")
  }
  if (text === "") return { text }
  try {
    return { parsed: JSON.parse(text) }
  } catch {
    return { text }
  }
}

/**
 * A body's text, or undefined past `maxBytes` (a declared length over it is refused unread), as
 * the SDK's `readRequestBody` reads it but decoded once from its bytes: its `TextDecoder` in
 * stream mode opens an ICU converter per request. UTF-8, invalid bytes replaced, a leading BOM
 * dropped (as `TextDecoder` does).
 */
async function readBodyText(req: Request, maxBytes: number): Promise<string | undefined> {
  if (Number(req.headers.get("content-length")) > maxBytes) return undefined
  if (req.body === null) return ""
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let received = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      received += value.byteLength
      if (received > maxBytes) return undefined
      chunks.push(value)
    }
  } finally {
    reader.releaseLock()
  }
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks)
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

/**
 * Whether a parsed POST body is one the SDK's classification never routes to the 2025-11-25
 * leg, so its second classification (`isLegacyRequest`) can be skipped: one JSON-RPC request or
 * notification (a method, no `result` or `error`) other than `initialize`, whose `params._meta`
 * carries the 2026-07-28 envelope claim (the protocol-version key). The SDK routes such a body to
 * the modern leg, which serves it or answers its envelope's errors. Anything else is classified
 * by `isLegacyRequest`.
 */
function claimsModernEnvelope(body: unknown): boolean {
  if (!isPlainObject(body) || typeof body.method !== "string" || body.method === "initialize") return false
  if ("result" in body || "error" in body) return false
  const params = body.params
  if (!isPlainObject(params)) return false
  const meta = params._meta
  return isPlainObject(meta) && PROTOCOL_VERSION_META_KEY in meta
}

/** How a `Host` or `Origin` value was judged against `allowedHosts`. */
type HostVerdict = "ok" | "invalid" | "forbidden"

/** Verdicts kept per value (a server sees few distinct ones); beyond this, values are judged anew. */
const MAX_HOST_VERDICTS = 64

/**
 * DNS-rebinding protection: `Host` (and `Origin`, when sent) must name an allowed host. The
 * verdict on each distinct value is kept (bounded), so a request parses no URL for a value seen
 * before.
 */
function hostGuard(allowedHosts: string[]): (req: Request) => Response | undefined {
  const hosts = new Map<string, HostVerdict>()
  const origins = new Map<string, HostVerdict>()
  const judged = (kept: Map<string, HostVerdict>, value: string, judge: () => HostVerdict) => {
    let verdict = kept.get(value)
    if (verdict === undefined) {
      verdict = judge()
      if (kept.size < MAX_HOST_VERDICTS) kept.set(value, verdict)
    }
    return verdict
  }
  return (req) => {
    const hostHeader = req.headers.get("host") ?? hostOfUrl(req.url)
    const host = judged(hosts, hostHeader, () => {
      const checked = validateHostHeader(hostHeader, allowedHosts)
      return checked.ok ? "ok" : checked.errorCode === "invalid_host_header" ? "invalid" : "forbidden"
    })
    if (host === "invalid")
      return jsonError(400, "TNX_BAD_REQUEST", "the Host header is not a valid host[:port]")
    if (host === "forbidden") return jsonError(403, "TNX_FORBIDDEN_HOST", "this Host is not allowed")
    const origin = req.headers.get("origin")
    if (
      origin !== null &&
      judged(origins, origin, () => (validateOriginHeader(origin, allowedHosts).ok ? "ok" : "forbidden")) !==
        "ok"
    )
      return jsonError(403, "TNX_FORBIDDEN_ORIGIN", "this Origin is not allowed")
    return undefined
  }
}

/**
 * The `host` of a request's URL (for a request without a `Host` header): a `Request`'s URL is
 * serialized and holds no credentials, so its authority is the text between `//` and the path
 * (anything else is parsed).
 */
function hostOfUrl(url: string): string {
  const start = url.indexOf("//") + 2
  let end = start
  while (end < url.length && url[end] !== "/" && url[end] !== "?" && url[end] !== "#") end++
  const authority = url.slice(start, end)
  return start > 1 && !authority.includes("@") ? authority : new URL(url).host
}

function jsonError(status: number, code: string, message: string): Response {
  return new Response(JSON.stringify({ error: { code, message } }), {
    status,
    headers: { "content-type": "application/json" },
  })
}
