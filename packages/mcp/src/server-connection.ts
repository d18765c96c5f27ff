import {
  type CallToolRequestOptions,
  Client,
  type ClientOptions,
  IssuerMismatchError,
  OAuthError,
  ProtocolError,
  ProtocolErrorCode,
  SSEClientTransport,
  SUPPORTED_PROTOCOL_VERSIONS,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type Transport,
  UnauthorizedError,
  auth,
  isInputRequiredResult,
} from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import { setTimeout as delay } from "node:timers/promises"
import type { Answer, Request, ToolContext } from "@toolnexus/core"
import { createCredentialedFetch } from "@toolnexus/core"
import type { ToolAnnotations } from "./approval-policy.js"
import { type ClientFeatures, answerSampling, clientCapabilities } from "./client-features.js"
import { type McpServerConfig, isHttpConfig, isPlainObject } from "./config.js"
import { type Elicitation, elicitResultOf, elicitationOf } from "./elicitation.js"
import { McpConnectError, McpHandshakeTimeoutError } from "./errors.js"
import { type McpOAuthOptions, oauthSecrets } from "./oauth-options.js"
import { TokenStoreAuthProvider } from "./oauth-provider.js"
import { Redactor } from "./redactor.js"
import { taskRequestId } from "./request-ids.js"
import {
  type Envelope,
  type McpTaskState,
  TaskRequestError,
  TaskWire,
  createdTaskOf,
  taskStateOf,
} from "./task-wire.js"
import type { TokenStore } from "./token-store.js"
import type { CallToolOutcome } from "./tool-output.js"

/** @internal One tool as the server lists it. */
export interface ServerTool {
  name: string
  description: string
  inputSchema: unknown
  annotations?: ToolAnnotations
}

/** @internal Settings shared by every server of a connection. */
export interface ServerOptions {
  connectTimeoutMs: number
  callTimeoutMs: number
  tokenStore: TokenStore
  oauth: McpOAuthOptions
  /** The protocol revisions to speak (negotiated); undefined ⇒ 2026-07-28 and 2025-11-25. */
  protocolVersions?: readonly string[]
  /** Roots, sampling and logging, as configured. */
  features: ClientFeatures
  /** Called after `tools/list_changed` has been applied. */
  onToolsChanged(): void
}

/** @internal One tool call in flight, as elicitations see it. */
export interface InflightCall {
  tool: string
  ctx: ToolContext
  /** An answer given before the call was re-issued, matched to the elicitation by digest. */
  replay: Map<string, Answer>
  /** Set when an elicitation had nobody to answer it: the call was cancelled for it. */
  suspended?: Request
  /** Set when an answer did not fit the server's form. */
  problem?: string
  abort: AbortController
  /** @internal Set while the call runs. */
  deadline?: CallDeadline
  /** A 2026-07-28 round the call halted in: the call resumes by retrying it, not from the start. */
  resume?: McpRound
  /** A task the call parked on: the call resumes by following it, not by calling the tool again. */
  task?: McpTaskKeep
}

/**
 * @internal What a call parked on a task (tasks extension) keeps in its request's data: the
 * task, when it expires (its `ttlMs` from its creation), how often to poll it, and for a task
 * waiting on input, its input requests and the responses gathered before the halt.
 */
export interface McpTaskKeep {
  taskId: string
  /** The end of the task's `ttlMs`, in epoch ms: after it the task is cancelled, not polled. */
  expiresAt?: number
  pollIntervalMs: number
  inputRequests?: McpRound["inputRequests"]
  responses?: Record<string, unknown>
}

/** @internal The request data key of a call parked on a task. */
export const TASK_KEY = "mcpTask"
/** @internal The kind of the request a call parks on while its task works. */
export const TASK_KIND = "mcp_task"

/**
 * @internal One `input_required` round of a 2026-07-28 call, as a halted call keeps it in its
 * request's data: the server's input requests, its opaque `requestState` (sent back as it
 * came, to that server only), and the responses gathered before the halt.
 */
export interface McpRound {
  inputRequests: Record<string, { method: string; params?: Record<string, unknown> }>
  requestState?: string
  responses?: Record<string, unknown>
}

/** @internal The request data key of a halted call's round. */
export const ROUND_KEY = "mcpRound"

/** @internal How a call ended, before it becomes a ToolResult. */
export type CallEnd =
  | { kind: "result"; outcome: CallToolOutcome }
  | { kind: "suspended"; request: Request }
  | { kind: "login"; url: string }
  /** The server refused the call until the user completes a flow at `url` (error -32042). */
  | { kind: "url"; url: string; message: string; elicitationId?: string }
  | { kind: "failed"; message: string }

const BACKOFF_BASE_MS = 500
const BACKOFF_MAX_MS = 30_000
/** The longest timer Node allows: the SDK's own request timeout is left out of the way. */
const NO_SDK_TIMEOUT = 2_147_483_647
const STDERR_TAIL = 2_000
const PROBE_TIMEOUT_MS = 2_000
/** Rounds of one 2026-07-28 call before it is given up on (a server that never completes). */
const MAX_ROUNDS = 10
/** The poll interval of a task whose server names none. */
const DEFAULT_POLL_MS = 5_000

/**
 * @internal One configured server: its MCP client session, its tools, and the rules for a
 * session that dies (the next call reconnects at once; backoff only between failed attempts).
 */
export class ServerConnection {
  readonly name: string
  readonly #config: McpServerConfig
  readonly #options: ServerOptions
  readonly #redactor: Redactor
  readonly #auth: TokenStoreAuthProvider | undefined
  #client: Client | undefined
  #transport: Transport | undefined
  #wire: TaskWire | undefined
  #capabilities: Record<string, unknown> = {}
  #connecting: Promise<void> | undefined
  #status: "ready" | "failed" | "login" | "closed" = "failed"
  #error: Error | undefined
  #tools: ServerTool[] = []
  #stderr = ""
  #failures = 0
  #retryAt = 0
  #usesLogin = false
  #probing = false
  /**
   * Set for a 2025-03-26 server that is its own authorization server and names itself with a
   * path (`https://host/oauth`) in metadata found at its origin: accepted, as that revision
   * had it; any other issuer mismatch still ends the flow.
   */
  #ownIssuerPath = false
  readonly #inflight = new Set<InflightCall>()

  constructor(name: string, config: McpServerConfig, options: ServerOptions) {
    this.name = name
    this.#config = config
    this.#options = options
    const http = isHttpConfig(config)
    this.#redactor = new Redactor(config, http ? oauthSecrets(options.oauth) : [])
    this.#auth = http
      ? new TokenStoreAuthProvider(name, config.url, options.tokenStore, options.oauth)
      : undefined
  }

  /** "login": the server wants an OAuth login before it says anything. */
  get status(): "ready" | "failed" | "login" | "closed" {
    return this.#status
  }

  get error(): Error | undefined {
    return this.#error
  }

  get tools(): readonly ServerTool[] {
    return this.#tools
  }

  /** The pid of the child process of a stdio server, while it runs. */
  get pid(): number | undefined {
    const transport = this.#transport
    return transport instanceof ChildTransport ? (transport.pid ?? undefined) : undefined
  }

  /**
   * True for a remote server that uses an OAuth login: it asked for one, or the token store
   * holds its record. Its sign-in tool stays listed, so a transcript halted on it (in this
   * process or an earlier one) can be resumed.
   */
  get usesLogin(): boolean {
    return this.#usesLogin
  }

  /** The login URL of a server in status "login". */
  get authorizationUrl(): string | undefined {
    return this.#auth?.authorizationUrl
  }

  /** Replaces this server's secrets (header and env values) in text bound for the model. */
  redact(text: string): string {
    return this.#redactor.clean(text)
  }

  /** Connects (once at a time); a failure is kept as the status, never thrown. */
  connect(): Promise<void> {
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined
    })
    return this.#connecting
  }

  /** Connects, or gives up waiting (not connecting) after `ms`: false when the wait ran out. */
  async #connectWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms)
    })
    try {
      return await Promise.race([this.connect().then(() => true as const), late])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Calls a tool, reconnecting first when the session is gone and the backoff allows it. */
  async call(call: InflightCall, args: Record<string, unknown>): Promise<CallEnd> {
    if (this.#status === "closed")
      return { kind: "failed", message: `MCP server ${JSON.stringify(this.name)} is closed` }
    if (this.#status !== "ready") {
      const wait = this.#retryAt - Date.now()
      if (wait > 0 && this.#status === "failed") return { kind: "failed", message: this.#unavailable(wait) }
      // The reconnect is part of the call: it gets the call's time limit (and goes on after it).
      if (!(await this.#connectWithin(this.#options.callTimeoutMs))) {
        return {
          kind: "failed",
          message: `MCP server ${JSON.stringify(this.name)} did not reconnect within ${this.#options.callTimeoutMs} ms`,
        }
      }
      const status = this.status
      if (status === "login" && this.authorizationUrl) return { kind: "login", url: this.authorizationUrl }
      if (status !== "ready") return { kind: "failed", message: this.#unavailable(0) }
    }
    const client = this.#client as Client
    const signals = call.ctx.signal ? [call.abort.signal, call.ctx.signal] : [call.abort.signal]
    // Our own limit, not the SDK's: it must pause while a person answers an elicitation.
    const deadline = new CallDeadline(this.#options.callTimeoutMs, () => call.abort.abort())
    call.deadline = deadline
    this.#inflight.add(call)
    try {
      // The definition as listed, without its output schema: the SDK mirrors the declared
      // headers from it and does not hold a round's answer (no structured content) for a result.
      const listed = this.#tools.find((t) => t.name === call.tool)
      const toolDefinition = { name: call.tool, inputSchema: listed?.inputSchema ?? { type: "object" } }
      const options = {
        signal: AbortSignal.any(signals),
        timeout: NO_SDK_TIMEOUT,
        onprogress: () => deadline.restart(),
        allowInputRequired: true,
        toolDefinition: toolDefinition as CallToolRequestOptions["toolDefinition"],
      }
      if (call.task) {
        deadline.stop()
        return await this.#followTask(call, call.task, { taskId: call.task.taskId, status: "input_required" })
      }
      let round = call.resume
      for (let rounds = 0; ; rounds++) {
        let params: Record<string, unknown> = { name: call.tool, arguments: args }
        if (round) {
          if (rounds > MAX_ROUNDS) {
            return {
              kind: "failed",
              message: `MCP server ${JSON.stringify(this.name)}: ${call.tool} still asked for input after ${MAX_ROUNDS} rounds`,
            }
          }
          const gathered = await this.#fulfil(call, round)
          if (gathered.kind !== "responses") return gathered
          params = { ...params, inputResponses: gathered.responses }
          if (round.requestState !== undefined) params.requestState = round.requestState
        }
        // callTool: on 2026-07-28 it mirrors the parameters the tool declares as `Mcp-Param-*`
        // headers (SEP-2243).
        const outcome: unknown = await client.callTool(params as { name: string }, options)
        if (call.suspended) return { kind: "suspended", request: call.suspended }
        const task = createdTaskOf(outcome)
        if (task) {
          // The task has its own bounds (its TTL, and the run's signal): not the call's limit.
          deadline.stop()
          return await this.#followTask(call, keepOf(task), task)
        }
        if (!isInputRequiredResult(outcome)) return { kind: "result", outcome: outcome as CallToolOutcome }
        round = { inputRequests: (outcome.inputRequests ?? {}) as McpRound["inputRequests"] }
        if (outcome.requestState !== undefined) round.requestState = outcome.requestState
      }
    } catch (error) {
      if (call.suspended) return { kind: "suspended", request: call.suspended }
      return this.#callFailed(call, error)
    } finally {
      deadline.stop()
      this.#inflight.delete(call)
    }
  }

  /**
   * Completes an OAuth login from the authorization server's redirect (the full callback URL,
   * or its `code`), saves the tokens in the token store and reconnects.
   */
  async finishLogin(callback: string): Promise<void> {
    const auth_ = this.#auth
    if (!auth_ || !isHttpConfig(this.#config)) {
      throw new McpConnectError(this.name, "is not a remote server; it has no login")
    }
    const { code, state, iss } = parseCallback(this.name, callback)
    const expected = await auth_.expectedState()
    if (!expected)
      throw new McpConnectError(this.name, "no login is in progress (it finished or was never started)")
    if (state !== undefined && state !== expected) {
      throw new McpConnectError(this.name, "the login callback's state does not match the login in progress")
    }
    try {
      await auth(auth_, {
        serverUrl: this.#config.url,
        authorizationCode: code,
        skipIssuerMetadataValidation: this.#ownIssuerPath,
        ...(iss === undefined ? {} : { iss }),
      })
    } catch (error) {
      throw new McpConnectError(this.name, `the login could not be completed: ${this.#clean(error)}`)
    }
    auth_.authorizationUrl = undefined
    await this.#reset()
    await this.connect()
  }

  async close(): Promise<void> {
    this.#status = "closed"
    for (const call of this.#inflight) call.abort.abort()
    await this.#reset()
    // A reconnect under way ends its own session when it sees the status; wait for that.
    await this.#connecting
  }

  async #connect(): Promise<void> {
    await this.#reset()
    this.#stderr = ""
    if (this.#auth && !this.#auth.isMachine && !this.#usesLogin)
      this.#usesLogin = (await this.#options.tokenStore.get(this.name)) !== undefined
    const features = this.#options.features
    const capabilities = clientCapabilities(features)
    this.#capabilities = capabilities as Record<string, unknown>
    const client = new Client(
      { name: CLIENT_INFO.name, version: CLIENT_INFO.version },
      {
        capabilities,
        ...negotiationOf(this.#options.protocolVersions, this.#options.connectTimeoutMs),
        // 2026-07-28 rounds are gathered here (inline, or halting with the round kept).
        inputRequired: { autoFulfill: false },
      },
    )
    // On 2025-11-25 these come as the server's requests during a call; on 2026-07-28 as the
    // call's `input_required` rounds, which the client fulfils through the same handlers.
    client.setRequestHandler("elicitation/create", (request) => this.#onElicit(request.params))
    // Features not configured are not announced; the SDK answers their requests "method not found".
    const { roots, sampling, onLog } = features
    if (roots) client.setRequestHandler("roots/list", () => ({ roots: roots.map((r) => ({ ...r })) }))
    if (sampling) {
      client.setRequestHandler("sampling/createMessage", async (request) => {
        const call = [...this.#inflight].find((c) => !c.suspended)
        // A person may be asked and a model runs: neither counts against the call's time limit.
        call?.deadline?.stop()
        try {
          return await answerSampling(request.params, sampling, {
            server: this.name,
            tool: call?.tool,
            ctx: call?.ctx,
          })
        } finally {
          call?.deadline?.restart()
        }
      })
    }
    if (onLog) {
      client.setNotificationHandler("notifications/message", (notification) => {
        const { level, logger, data } = notification.params
        onLog(
          logger === undefined
            ? { server: this.name, level, data }
            : { server: this.name, level, logger, data },
        )
      })
    }
    client.setNotificationHandler("notifications/tools/list_changed", () => this.#refresh(client))
    const timeoutMs = this.#options.connectTimeoutMs
    let timer: NodeJS.Timeout | undefined
    try {
      const handshake = this.#handshake(client)
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new McpHandshakeTimeoutError(this.name, timeoutMs)), timeoutMs)
      })
      await Promise.race([handshake, timeout])
      this.#tools = await listTools(client, timeoutMs)
    } catch (error) {
      await client.close().catch(() => {})
      this.#client = undefined
      this.#transport = undefined
      // The SDK's own limit (its `server/discover` probe over HTTP) is this same connect limit.
      const timedOut = error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout
      this.#fail(timedOut ? new McpHandshakeTimeoutError(this.name, timeoutMs) : error, true)
      return
    } finally {
      clearTimeout(timer)
    }
    if (this.#status === "closed") {
      // close() came during the handshake: this session (and its child) must not outlive it.
      await client.close().catch(() => {})
      return
    }
    client.onclose = () => {
      if (this.#client !== client || this.#status === "closed") return
      this.#fail(new McpConnectError(this.name, `the connection closed${this.#stderrNote()}`))
    }
    // Over HTTP a dead server shows only as a transport error (a broken response stream),
    // while the call waits for an answer that will never come: ask whether it still answers.
    client.onerror = () => {
      if (this.#inflight.size > 0) this.#probe(client)
    }
    this.#client = client
    this.#status = "ready"
    this.#error = undefined
    this.#failures = 0
  }

  /** Opens the transport: stdio, or Streamable HTTP falling back to HTTP+SSE. */
  async #handshake(client: Client): Promise<void> {
    const config = this.#config
    if (!isHttpConfig(config)) {
      const start = () => {
        const transport = new ChildTransport({ ...config, stderr: "pipe" })
        this.#wire = new TaskWire(transport)
        transport.stderr?.on("data", (chunk: Buffer) => {
          this.#stderr = (this.#stderr + chunk.toString()).slice(-STDERR_TAIL)
        })
        this.#transport = transport
        return transport
      }
      try {
        await client.connect(start(), { timeout: this.#options.connectTimeoutMs })
      } catch (error) {
        // A server that exits on the `server/discover` probe speaks only the older revisions:
        // start it once more, straight to `initialize` (when the options allow one).
        if (!(error instanceof SdkError && error.code === SdkErrorCode.EraNegotiationFailed)) throw error
        if (negotiationOf(this.#options.protocolVersions, 1).versionNegotiation?.mode !== "auto") throw error
        await this.#transport?.close().catch(() => {})
        this.#stderr = "" // what the retry says is what counts
        await client.connect(start(), { timeout: this.#options.connectTimeoutMs, prior: { kind: "legacy" } })
      }
      return
    }
    const url = new URL(config.url)
    const headers = this.#redactor.headers()
    // The headers stay with the server's origin: not along a redirect, not to an authorization server.
    const fetch = createCredentialedFetch({ origin: url, headers })
    const opts = { requestInit: { headers }, authProvider: this.#auth, fetch }
    const open = () => {
      const skipIssuerMetadataValidation = this.#ownIssuerPath
      const transport = new StreamableHTTPClientTransport(url, { ...opts, skipIssuerMetadataValidation })
      this.#wire = new TaskWire(transport)
      this.#transport = transport
      return transport
    }
    let streamable = open()
    try {
      try {
        await client.connect(streamable, { timeout: this.#options.connectTimeoutMs })
      } catch (error) {
        if (this.#ownIssuerPath || !isOwnIssuerPath(error, url)) throw error
        this.#ownIssuerPath = true
        await streamable.close().catch(() => {})
        streamable = open()
        await client.connect(streamable, { timeout: this.#options.connectTimeoutMs })
      }
    } catch (error) {
      if (!isLegacyHttpRefusal(error)) throw error
      // Servers of the 2024-11-05 protocol answer the POST with 4xx; they speak HTTP+SSE.
      await streamable.close().catch(() => {})
      const sse = new SSEClientTransport(url, opts)
      this.#transport = sse
      try {
        await client.connect(sse, { timeout: this.#options.connectTimeoutMs })
      } catch (fallback) {
        if (fallback instanceof UnauthorizedError) throw fallback
        throw new McpConnectError(
          this.name,
          `Streamable HTTP: ${this.#clean(error)}; HTTP+SSE: ${this.#clean(fallback)}`,
          { cause: fallback },
        )
      }
    }
  }

  async #refresh(client: Client): Promise<void> {
    try {
      this.#tools = await listTools(client, this.#options.callTimeoutMs)
    } catch (error) {
      this.#error = new McpConnectError(this.name, `refreshing the tool list failed: ${this.#clean(error)}`)
      return
    }
    this.#options.onToolsChanged()
  }

  /**
   * A server asks the user something during a call. Answered from the answer the re-issued call
   * carries, else inline through `ctx.resolve`, else the call is cancelled and suspends.
   */
  async #onElicit(params: Elicitation["params"]): Promise<{ action: "accept" | "decline" | "cancel" }> {
    const calls = [...this.#inflight].filter((c) => !c.suspended)
    const first = calls[0]
    if (!first) return { action: "decline" }
    const probe = elicitationOf(params, this.name, first.tool)
    const call = calls.find((c) => c.replay.has(probe.digest)) ?? first
    const elicitation = call === first ? probe : elicitationOf(params, this.name, call.tool)
    const answered = await this.#answer(call, elicitation)
    if ("request" in answered) {
      call.suspended = answered.request
      // The cancel reaches the server first; then the call itself is withdrawn.
      setImmediate(() => call.abort.abort())
      return { action: "cancel" }
    }
    return answered.result
  }

  /**
   * Gathers one response per input request of a 2026-07-28 round: elicitations as above,
   * sampling by this client's model, roots from the options. An elicitation nobody can answer
   * now ends the call suspended on it, the round (with what was gathered) in its data.
   */
  async #fulfil(
    call: InflightCall,
    round: McpRound,
    place: (halted: McpRound) => Record<string, unknown> = (halted) => ({ [ROUND_KEY]: halted }),
  ): Promise<{ kind: "responses"; responses: Record<string, unknown> } | CallEnd> {
    const responses: Record<string, unknown> = { ...round.responses }
    const { roots, sampling } = this.#options.features
    for (const [key, input] of Object.entries(round.inputRequests)) {
      if (key in responses) continue
      const params = (input.params ?? {}) as Record<string, unknown>
      if (input.method === "elicitation/create") {
        const elicitation = elicitationOf(params as Elicitation["params"], this.name, call.tool)
        const answered = await this.#answer(call, elicitation)
        if ("request" in answered) {
          const halted = { ...round, responses }
          return {
            kind: "suspended",
            request: { ...answered.request, data: { ...answered.request.data, ...place(halted) } },
          }
        }
        responses[key] = answered.result
      } else if (input.method === "sampling/createMessage" && sampling) {
        call.deadline?.stop()
        try {
          responses[key] = await answerSampling(params as Parameters<typeof answerSampling>[0], sampling, {
            server: this.name,
            tool: call.tool,
            ctx: call.ctx,
          })
        } finally {
          call.deadline?.restart()
        }
      } else if (input.method === "roots/list" && roots) {
        responses[key] = { roots: roots.map((r) => ({ ...r })) }
      } else {
        const what =
          input.method === "sampling/createMessage"
            ? "sampling"
            : input.method === "roots/list"
              ? "roots"
              : input.method
        return {
          kind: "failed",
          message: `MCP server ${JSON.stringify(this.name)}: ${call.tool} asked for ${what}, which this client does not offer`,
        }
      }
    }
    return { kind: "responses", responses }
  }

  /**
   * Follows a task the call created (or parked on) to its end: polled at the server's interval
   * inline when a `waitFor` can answer (`ctx.resolve`); else the call parks on a `mcp_task`
   * request that expires when the next poll is due, so the host's sweep resumes it. The task's
   * input requests are answered like a round's and sent with `tasks/update`; past its TTL the
   * task is cancelled (`tasks/cancel`).
   */
  async #followTask(call: InflightCall, keep: McpTaskKeep, first: McpTaskState): Promise<CallEnd> {
    const signals = call.ctx.signal ? [call.abort.signal, call.ctx.signal] : [call.abort.signal]
    const signal = AbortSignal.any(signals)
    let task = first
    let responses = keep.responses
    const what = `${call.tool} (task ${task.taskId})`
    try {
      for (;;) {
        if (keep.expiresAt !== undefined && Date.now() > keep.expiresAt) {
          await this.cancelTask(keep.taskId).catch(() => {})
          return {
            kind: "failed",
            message: `MCP server ${JSON.stringify(this.name)}: ${what} expired before it ended; it was cancelled`,
          }
        }
        switch (task.status) {
          case "completed":
            if (task.result) return { kind: "result", outcome: task.result as CallToolOutcome }
            break // a CreateTaskResult says completed without the result: tasks/get has it
          case "failed":
            return {
              kind: "failed",
              message: `MCP server ${JSON.stringify(this.name)}: ${what} failed: ${this.#redactor.clean(task.error?.message ?? task.statusMessage ?? "no reason given")}`,
            }
          case "cancelled":
            return {
              kind: "failed",
              message: `MCP server ${JSON.stringify(this.name)}: ${what} was cancelled`,
            }
          case "input_required": {
            const inputRequests = task.inputRequests ?? keep.inputRequests
            // A CreateTaskResult need not carry the questions: tasks/get has them.
            if (!inputRequests) break
            const gathered = await this.#fulfil(
              call,
              responses ? { inputRequests, responses } : { inputRequests },
              (halted) => ({
                [TASK_KEY]: { ...keep, inputRequests: halted.inputRequests, responses: halted.responses },
              }),
            )
            if (gathered.kind === "suspended") {
              const request = { ...gathered.request }
              if (keep.expiresAt !== undefined) request.expiresAt = new Date(keep.expiresAt).toISOString()
              return { kind: "suspended", request }
            }
            if (gathered.kind !== "responses") {
              await this.cancelTask(keep.taskId).catch(() => {})
              return gathered
            }
            if (call.problem) {
              await this.cancelTask(keep.taskId).catch(() => {})
              return { kind: "result", outcome: { content: [] } }
            }
            await this.#taskRequest("tasks/update", {
              taskId: keep.taskId,
              inputResponses: gathered.responses,
            })
            responses = undefined
            break
          }
          default:
            // Nobody waits inline: the run parks durably, and the wait's expiry polls again.
            if (!call.ctx.resolve) return { kind: "suspended", request: this.#waitRequest(call, keep, task) }
            await delay(keep.pollIntervalMs, undefined, { signal })
        }
        task = await this.#getTask(keep.taskId)
      }
    } catch (error) {
      if (signal.aborted) {
        // The run stopped waiting: the task is not left working for nobody.
        await this.cancelTask(keep.taskId).catch(() => {})
      }
      // The server's answer to a tasks request (an unknown task, say): the session is fine.
      if (error instanceof TaskRequestError)
        return {
          kind: "failed",
          message: `MCP server ${JSON.stringify(this.name)}: ${what}: ${this.#clean(error)}`,
        }
      return this.#callFailed(call, error)
    }
  }

  /** Cancels a task (`tasks/cancel`); the server's answer is an empty ack. */
  async cancelTask(taskId: string): Promise<void> {
    await this.#taskRequest("tasks/cancel", { taskId })
  }

  async #getTask(taskId: string): Promise<McpTaskState> {
    const task = taskStateOf(await this.#taskRequest("tasks/get", { taskId }))
    if (!task) throw new TaskRequestError(undefined, `tasks/get for ${taskId} answered no task`)
    return task
  }

  async #taskRequest(method: string, params: Record<string, unknown>): Promise<unknown> {
    if (this.#status !== "ready") await this.#connectWithin(this.#options.callTimeoutMs)
    const client = this.#client
    const wire = this.#wire
    const protocolVersion = client?.getNegotiatedProtocolVersion()
    if (!client || !wire || this.#status !== "ready" || !protocolVersion)
      throw new McpConnectError(this.name, this.#unavailable(0))
    const envelope: Envelope = {
      protocolVersion,
      clientInfo: CLIENT_INFO,
      clientCapabilities: this.#capabilities,
    }
    return wire.request(method, params, envelope, this.#options.callTimeoutMs)
  }

  /** The request a call parks on while its task works: it expires when the task is due a poll. */
  #waitRequest(call: InflightCall, keep: McpTaskKeep, task: McpTaskState): Request {
    const note = task.statusMessage ? `: ${this.#redactor.clean(task.statusMessage)}` : ""
    return {
      id: taskRequestId(),
      kind: TASK_KIND,
      prompt: `MCP server ${JSON.stringify(this.name)} runs ${call.tool} as a task${note}; the run waits for it`,
      expiresAt: new Date(Date.now() + keep.pollIntervalMs).toISOString(),
      data: { server: this.name, tool: call.tool, [TASK_KEY]: { ...keep, responses: undefined } },
    }
  }

  /**
   * An elicitation's answer: the one the re-issued or resumed call carries, else asked inline
   * through `ctx.resolve`; with neither, the request to suspend on.
   */
  async #answer(
    call: InflightCall,
    elicitation: Elicitation,
  ): Promise<{ result: { action: "accept" | "decline" | "cancel" } } | { request: Request }> {
    const params = elicitation.params
    let answer = call.replay.get(elicitation.digest)
    if (answer) call.replay.delete(elicitation.digest)
    else if (call.ctx.resolve) {
      call.deadline?.stop()
      try {
        answer = await call.ctx.resolve(elicitation.request)
      } finally {
        call.deadline?.restart()
      }
    }
    if (!answer) return { request: elicitation.request }
    const { result, problem } = elicitResultOf(elicitation, answer)
    if (problem)
      call.problem = `the answer to ${JSON.stringify(params.message)} does not fit the form: ${problem}`
    return { result }
  }

  #callFailed(call: InflightCall, error: unknown): CallEnd {
    if (error instanceof UnauthorizedError || this.authorizationUrl) {
      const url = this.authorizationUrl
      if (url) return { kind: "login", url }
    }
    if (error instanceof ProtocolError && error.code === ProtocolErrorCode.UrlElicitationRequired) {
      const first = (error.data as { elicitations?: Record<string, unknown>[] } | undefined)
        ?.elicitations?.[0]
      if (typeof first?.url === "string") {
        const end: CallEnd = {
          kind: "url",
          url: first.url,
          message: typeof first.message === "string" ? first.message : error.message,
        }
        if (typeof first.elicitationId === "string") end.elicitationId = first.elicitationId
        return end
      }
    }
    if (call.ctx.signal?.aborted) return { kind: "failed", message: `the call to ${call.tool} was aborted` }
    if (call.deadline?.expired) {
      return {
        kind: "failed",
        message: `MCP server ${JSON.stringify(this.name)}: ${call.tool} did not answer within ${this.#options.callTimeoutMs} ms`,
      }
    }
    // A JSON-RPC error is the server's answer; anything else (a refused connection, a 404 for
    // a session a restarted server does not know, a closed pipe) means the session is gone.
    const lost = !(error instanceof ProtocolError) && !isAnswerError(error)
    if (lost || this.#status !== "ready") {
      if (this.#status === "ready") this.#fail(error)
      // When the session failed first (and ended this call), its reason says more than the abort.
      const failure = this.#error
      const reason = McpConnectError.isInstance(failure) ? failure.reason : this.#clean(error)
      return {
        kind: "failed",
        message: `MCP server ${JSON.stringify(this.name)} went away during the call to ${call.tool} (${reason}); the next call reconnects`,
      }
    }
    return {
      kind: "failed",
      message: `MCP server ${JSON.stringify(this.name)}: ${call.tool} failed: ${this.#clean(error)}`,
    }
  }

  /** Pings the server once (at a time); no answer ⇒ the session is gone and its calls end now. */
  #probe(client: Client): void {
    if (this.#probing) return
    this.#probing = true
    // 2026-07-28 has no `ping`: any cheap request shows whether the server still answers.
    const alive =
      client.getProtocolEra() === "modern"
        ? client.request({ method: "tools/list", params: {} }, ANY_RESULT, { timeout: PROBE_TIMEOUT_MS })
        : client.ping({ timeout: PROBE_TIMEOUT_MS })
    alive
      .catch((error: unknown) => {
        if (this.#client === client && this.#status === "ready") {
          this.#fail(
            new McpConnectError(this.name, `stopped answering: ${this.#clean(error)}`, { cause: error }),
          )
        }
      })
      .finally(() => {
        this.#probing = false
      })
  }

  /**
   * Records a failure. `attempt`: a connection attempt failed, which starts (or lengthens) the
   * backoff before the next one; a session that was working and died does not, so the first
   * call after a death reconnects at once.
   */
  #fail(error: unknown, attempt = false): void {
    if (this.#status === "closed") return
    if (error instanceof UnauthorizedError && this.authorizationUrl) {
      this.#status = "login"
      this.#usesLogin = true
      this.#error = new McpConnectError(this.name, "needs an OAuth login before it can be used")
      return
    }
    this.#status = "failed"
    this.#error =
      error instanceof McpHandshakeTimeoutError || error instanceof McpConnectError
        ? error
        : new McpConnectError(this.name, `${this.#clean(error)}${this.#stderrNote()}`, { cause: error })
    if (attempt) {
      this.#failures++
      this.#retryAt = Date.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (this.#failures - 1))
    } else {
      this.#failures = 0
      this.#retryAt = 0
    }
    // The session is gone: whatever was waiting on it ends now instead of at its timeout.
    for (const call of this.#inflight) call.abort.abort()
    const client = this.#client
    this.#client = undefined
    this.#transport = undefined
    client?.close().catch(() => {})
  }

  async #reset(): Promise<void> {
    const client = this.#client
    const transport = this.#transport
    this.#client = undefined
    this.#transport = undefined
    this.#tools = this.#status === "closed" ? [] : this.#tools
    if (client) await client.close().catch(() => {})
    else if (transport) await transport.close().catch(() => {})
  }

  #unavailable(waitMs: number): string {
    const reason = this.#error ? this.#error.message : "it is not connected"
    const retry = waitMs > 0 ? `; the next reconnect attempt is in ${Math.ceil(waitMs / 1000)} s` : ""
    return `MCP server ${JSON.stringify(this.name)} is unavailable (${reason})${retry}`
  }

  #stderrNote(): string {
    const tail = this.#stderr.trim()
    return tail ? ` (stderr: ${this.#redactor.clean(tail.slice(-500))})` : ""
  }

  #clean(error: unknown): string {
    let text = error instanceof Error ? error.message : String(error)
    if (error instanceof OAuthError) {
      // The authorization server's own words: its error code and description (never a secret:
      // those are redacted below, and the SDK does not echo the request).
      const grant = this.#auth?.isMachine ? `the ${this.#options.oauth.grant} grant` : "the token request"
      text = `the authorization server refused ${grant}: ${error.code}${text ? ` (${text})` : ""}`
    }
    // The SDK's HTTP errors keep the status in their data, and their message may not say it.
    const status = httpStatusOf(error)
    if (status !== undefined && status >= 100 && status < 600 && !text.includes(String(status)))
      text = `HTTP ${status}: ${text}`
    return this.#redactor.clean(text)
  }
}

/** How this client names itself (`initialize`, and every 2026-07-28 request's `_meta`). */
const CLIENT_INFO = { name: "toolnexus", version: "0.1.0" }

/** What a call keeps of a task the server just created. */
function keepOf(task: McpTaskState): McpTaskKeep {
  const keep: McpTaskKeep = { taskId: task.taskId, pollIntervalMs: task.pollIntervalMs ?? DEFAULT_POLL_MS }
  if (task.ttlMs !== undefined) {
    const created = task.createdAt ? Date.parse(task.createdAt) : Number.NaN
    keep.expiresAt = (Number.isFinite(created) ? created : Date.now()) + task.ttlMs
  }
  return keep
}

/**
 * The SDK's stdio transport, as a subclass: the v2 client then sends its `server/discover`
 * probe on this process instead of starting a second one to probe (one start per connect,
 * as servers with side effects on start expect).
 */
class ChildTransport extends StdioClientTransport {}

/** @internal A call's time limit: restarted by progress, stopped while a person answers. */
export class CallDeadline {
  readonly #ms: number
  readonly #onExpire: () => void
  #timer: NodeJS.Timeout | undefined
  expired = false

  constructor(ms: number, onExpire: () => void) {
    this.#ms = ms
    this.#onExpire = onExpire
    this.restart()
  }

  restart(): void {
    this.stop()
    this.#timer = setTimeout(() => {
      this.expired = true
      this.#onExpire()
    }, this.#ms)
  }

  stop(): void {
    clearTimeout(this.#timer)
  }
}

/**
 * Lists every page of tools. The result is read leniently (not through the SDK's strict
 * schema) so one tool with a non-object schema does not take the whole server down.
 */
async function listTools(client: Client, timeoutMs: number): Promise<ServerTool[]> {
  // The SDK's own listing first: on 2026-07-28 over HTTP it leaves out tools whose
  // `x-mcp-header` declarations are invalid (SEP-2243) and keeps the definitions it mirrors
  // `Mcp-Param-*` headers from. It refuses a whole page for one malformed tool, so a refused
  // page is read again leniently.
  try {
    const { tools } = await client.listTools(undefined, { timeout: timeoutMs, cacheMode: "refresh" })
    if (tools.length > 0 || client.getServerCapabilities()?.tools) return tools.map(serverToolOf)
  } catch (error) {
    if (
      error instanceof ProtocolError ||
      (error instanceof SdkError && error.code !== SdkErrorCode.InvalidResult)
    )
      throw error
  }
  const tools: ServerTool[] = []
  let cursor: string | undefined
  do {
    const params = cursor === undefined ? {} : { cursor }
    const page = (await client.request({ method: "tools/list", params }, ANY_RESULT, {
      timeout: timeoutMs,
    })) as Record<string, unknown>
    const listed = Array.isArray(page.tools) ? page.tools : []
    for (const tool of listed) {
      if (!isPlainObject(tool) || typeof tool.name !== "string" || tool.name === "") continue
      tools.push(serverToolOf(tool as { name: string } & Record<string, unknown>))
    }
    cursor = typeof page.nextCursor === "string" && page.nextCursor !== "" ? page.nextCursor : undefined
  } while (cursor !== undefined)
  return tools
}

function serverToolOf(tool: { name: string } & Record<string, unknown>): ServerTool {
  const entry: ServerTool = {
    name: tool.name,
    description: typeof tool.description === "string" ? tool.description : "",
    inputSchema: tool.inputSchema,
  }
  if (isPlainObject(tool.annotations)) entry.annotations = tool.annotations as ToolAnnotations
  return entry
}

/**
 * @internal An RFC 8414 issuer mismatch of the 2025-03-26 kind: the metadata was looked up at the MCP
 * server's own origin (no protected resource metadata named another) and names an issuer on
 * that same origin, with a path.
 */
export function isOwnIssuerPath(error: unknown, server: URL): boolean {
  if (!(error instanceof IssuerMismatchError) || error.kind !== "metadata") return false
  const { expected, received } = error
  if (expected === undefined || received === undefined || !URL.canParse(received)) return false
  return new URL(expected).href === `${server.origin}/` && new URL(received).origin === server.origin
}

/** The SDK's errors about an answer that came but was unusable: the session is still there. */
function isAnswerError(error: unknown): boolean {
  if (!(error instanceof SdkError)) return false
  return (
    error.code === SdkErrorCode.InvalidResult ||
    error.code === SdkErrorCode.UnsupportedResultType ||
    error.code === SdkErrorCode.InputRequiredRoundsExceeded
  )
}

/** A 4xx other than 401 on the first POST: the server predates Streamable HTTP. */
function isLegacyHttpRefusal(error: unknown): boolean {
  const status = httpStatusOf(error)
  return status !== undefined && status >= 400 && status < 500 && status !== 401
}

/** The HTTP status an SDK transport error carries (v2 keeps it in `data.status`). */
function httpStatusOf(error: unknown): number | undefined {
  if (!(error instanceof SdkError)) return undefined
  const status = (error.data as { status?: unknown } | undefined)?.status
  return typeof status === "number" ? status : undefined
}

/**
 * A result read as it comes (a Standard Schema that accepts anything): `tools/list` is read
 * leniently so that one malformed tool does not take the whole server down.
 */
const ANY_RESULT = {
  "~standard": { version: 1, vendor: "toolnexus", validate: (value: unknown) => ({ value }) },
} as const

const FIRST_STATELESS = "2026-07-28"
/**
 * The protocol revisions connectMcp speaks unless `protocolVersions` says otherwise: 2026-07-28,
 * then every older one the SDK knows (2025-11-25 first).
 */
export const DEFAULT_PROTOCOL_VERSIONS: readonly string[] = [FIRST_STATELESS, ...SUPPORTED_PROTOCOL_VERSIONS]

/**
 * @internal The v2 client's negotiation settings for the revisions to speak: with a 2026-07-28
 * (or later) revision and an older one, `server/discover` first and `initialize` as the
 * fallback; only stateless revisions ⇒ pinned (no fallback); only older ones ⇒ `initialize`.
 */
export function negotiationOf(
  versions: readonly string[] | undefined,
  connectTimeoutMs: number,
): Pick<ClientOptions, "versionNegotiation" | "supportedProtocolVersions"> {
  const list = [...(versions ?? DEFAULT_PROTOCOL_VERSIONS)]
  // ISO dates: later revisions sort after earlier ones.
  const modern = list.filter((v) => v >= FIRST_STATELESS)
  const legacy = list.filter((v) => v < FIRST_STATELESS)
  if (modern.length === 0) return { versionNegotiation: { mode: "legacy" }, supportedProtocolVersions: list }
  if (legacy.length === 0) return { versionNegotiation: { mode: { pin: modern[0] as string } } }
  // A stdio server that never answers the probe is an older one: half the connect budget
  // is left for its `initialize`.
  const probe = { timeoutMs: Math.max(1, Math.floor(connectTimeoutMs / 2)) }
  return { versionNegotiation: { mode: "auto", probe }, supportedProtocolVersions: list }
}

function parseCallback(server: string, callback: string): { code: string; state?: string; iss?: string } {
  if (!/^https?:\/\//.test(callback)) return { code: callback }
  const params = new URL(callback).searchParams
  const code = params.get("code")
  if (!code) {
    const error = params.get("error")
    throw new McpConnectError(
      server,
      error ? `the login was refused: ${error}` : "the callback URL has no code",
    )
  }
  const parsed: { code: string; state?: string; iss?: string } = { code }
  const state = params.get("state")
  if (state !== null) parsed.state = state
  // RFC 9207: the authorization server names itself; the SDK checks it against the one asked.
  const iss = params.get("iss")
  if (iss !== null) parsed.iss = iss
  return parsed
}
