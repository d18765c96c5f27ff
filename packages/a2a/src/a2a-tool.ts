import { randomUUID } from "node:crypto"
import { type AgentCard, type Message, Role } from "@a2a-js/sdk"
import {
  type Client as A2AClient,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client"
import {
  type Answer,
  ConfigError,
  type Request,
  type Tool,
  type ToolContext,
  type ToolResult,
  createCredentialedFetch,
  createSecretRedactor,
  headerSecretValues,
  pending,
} from "@toolnexus/core"
import { A2AConnectError } from "./errors.js"
import { callHeaders } from "./headers.js"
import { TaskView, dataPart, firstData, isInterrupted, isTerminal, partsText, textPart } from "./task-view.js"
import { toolNameFor } from "./tool-name.js"

/** Options of {@link a2aTool}. */
export interface A2AToolOptions {
  /** The agent's base URL; its card is read from `<url>/.well-known/agent-card.json`. */
  url?: string
  /** The agent's card, when it is known already (no card request is made). */
  card?: AgentCard | Record<string, unknown>
  /** The tool's name; default: the card's name made a valid tool name. */
  name?: string
  /** The tool's description; default: the card's, then one line per skill. */
  description?: string
  /**
   * Headers of the requests to the agent's origin (the origin of `url`, else of the card's
   * JSON-RPC interface); `${ENV}` references are read at call time. They never go to another
   * origin: not along a redirect, not to an interface the card names elsewhere (unless listed
   * in `allowOrigins`). Their values are redacted from every result and request text.
   */
  headers?: Record<string, string>
  /** Sent as `Authorization: Bearer <token>`, under the same origin rule as `headers`. */
  bearerToken?: string
  /** More origins that may receive `headers` and `bearerToken` (a card's interface on another host). */
  allowOrigins?: string[]
  /**
   * Deadline of reading the card (its body included) and setting the client up (default
   * 30 000 ms); past it `a2aTool` rejects with `A2AConnectError`.
   */
  connectTimeoutMs?: number
  /** Deadline of one call, answers asked inline included (default 300 000 ms). */
  callTimeoutMs?: number
  /** How often a non-streaming agent's task is read while it works (default 1 000 ms). */
  pollIntervalMs?: number
  /** The transport seam (default: the global `fetch`). */
  fetch?: typeof fetch
}

const INPUT_SCHEMA = {
  type: "object",
  properties: { prompt: { type: "string", description: "What to ask the agent." } },
  required: ["prompt"],
  additionalProperties: false,
}

/**
 * A remote Agent2Agent agent as a tool (source `"a2a"`): each call sends the prompt as one
 * user message and returns the task's artifacts. A task that needs input (`input-required`)
 * or a login (`auth-required`) becomes a suspension, answered inline through `ctx.resolve` or
 * after the run parked — the retry then continues the **same** remote task with one
 * follow-up message. Failures, cancels, network errors and timeouts are `isError` results
 * naming the agent; a call never throws and never hangs past `callTimeoutMs`.
 *
 * @param opts - where the agent is (`url` or `card`) and how to call it.
 * @returns the tool, once the card was read.
 * @throws A2AConnectError when the card cannot be read or names no JSON-RPC interface.
 * @example
 * ```ts
 * const travel = await a2aTool({ url: "https://travel.example.com" })
 * const toolkit = await createToolkit({ extraTools: [travel] })
 * ```
 */
export async function a2aTool(opts: A2AToolOptions): Promise<Tool> {
  return createA2ATool(opts, {})
}

/**
 * @internal What tests drive in place of real time: when a call's deadline fires, and a hook
 * told each remote task id a call learns (so a test acts once the call knows its task, not
 * after a guessed sleep).
 */
export interface A2AToolSeams {
  /** Arms the call's `callTimeoutMs` deadline: calls `fire` when it passes; returns the disarm. */
  deadline?: (ms: number, fire: () => void) => () => void
  /** Called (synchronously) when a call first knows its remote task's id. */
  onTask?: (taskId: string) => void
}

/** @internal {@link a2aTool} with its seams. */
export async function createA2ATool(opts: A2AToolOptions, seams: A2AToolSeams): Promise<Tool> {
  const {
    url,
    headers,
    bearerToken,
    connectTimeoutMs = 30_000,
    callTimeoutMs = 300_000,
    pollIntervalMs = 1_000,
    fetch: fetchImpl = globalThis.fetch,
  } = opts
  if (!url && !opts.card) throw new A2AConnectError("(none)", "give `url` or `card`")
  if (!(Number.isFinite(connectTimeoutMs) && connectTimeoutMs > 0 && connectTimeoutMs <= MAX_TIMEOUT_MS))
    throw new ConfigError(
      `a2aTool: connectTimeoutMs must be a positive number of milliseconds up to ${MAX_TIMEOUT_MS}; got ${String(connectTimeoutMs)}`,
    )
  const credentials = () => callHeaders(headers, bearerToken)
  // Read at use, so a rotated secret is redacted as it is sent.
  const redact = (text: string) => createSecretRedactor(headerSecretValues(credentials()))(text)
  const where = url ?? "the given card"
  const deadline = AbortSignal.timeout(connectTimeoutMs)
  const legacyCompat = { enabled: true }
  const secure = (origin: string) =>
    createCredentialedFetch({
      origin,
      allowOrigins: opts.allowOrigins,
      headers: credentials,
      fetch: fetchImpl,
    })
  let secured = url ? secure(url) : undefined
  let card: AgentCard
  try {
    if (opts.card) card = new DefaultAgentCardResolver({ legacyCompat }).normalizeAgentCard(opts.card)
    else {
      const send = secured as typeof fetch
      // The deadline covers the body too: a server that trickles the card is cut off with it.
      const cardFetch: typeof fetch = (input, init) => send(input, { ...init, signal: deadline })
      const resolver = new DefaultAgentCardResolver({ fetchImpl: cardFetch, legacyCompat })
      card = await raceSignal(resolver.resolve(url as string), deadline)
    }
  } catch (error) {
    const reason = deadline.aborted ? `no card within ${connectTimeoutMs} ms` : messageOf(error)
    throw new A2AConnectError(where, redact(`the agent card could not be read (${reason})`), { cause: error })
  }
  let client: A2AClient
  try {
    // An inline card is the caller's own: its JSON-RPC interface is the credentials' origin.
    secured ??= secure(jsonRpcUrl(card) ?? "http://invalid")
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl: secured, legacyCompat })],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
    })
    client = await raceSignal(factory.createFromAgentCard(card), deadline)
  } catch (error) {
    const reason = deadline.aborted ? `not connected within ${connectTimeoutMs} ms` : messageOf(error)
    throw new A2AConnectError(where, redact(`no usable JSON-RPC interface on the card (${reason})`), {
      cause: error,
    })
  }
  const agent = opts.name ?? (card.name || "a2a agent")
  const caller = new RemoteCall(client, {
    agent,
    streaming: card.capabilities?.streaming === true,
    callTimeoutMs,
    pollIntervalMs,
    redact,
    seams,
  })
  return {
    name: opts.name ?? toolNameFor(card.name),
    description: opts.description ?? describe(card),
    inputSchema: INPUT_SCHEMA,
    source: "a2a",
    execute: (args, ctx) => caller.call(args, ctx ?? {}),
  }
}

// setTimeout fires at once past 2^31 - 1 ms, which would turn a huge deadline into none.
const MAX_TIMEOUT_MS = 2_147_483_647

/** The URL of the card's JSON-RPC interface, when it names one. */
function jsonRpcUrl(card: AgentCard): string | undefined {
  const found = card.supportedInterfaces?.find((i) => /^jsonrpc$/i.test(i.protocolBinding))
  try {
    return found ? new URL(found.url).href : undefined
  } catch {
    return undefined
  }
}

function describe(card: AgentCard): string {
  const lines = [card.description || `The A2A agent ${card.name}.`]
  for (const skill of card.skills) lines.push(`${skill.name}: ${skill.description}`)
  return lines.join("\n")
}

interface CallSettings {
  agent: string
  streaming: boolean
  callTimeoutMs: number
  pollIntervalMs: number
  /** Replaces the configured secrets in text from the remote. */
  redact: (text: string) => string
  seams: A2AToolSeams
}

/** The real deadline: a timer. */
function timerDeadline(ms: number, fire: () => void): () => void {
  const timer = setTimeout(fire, ms)
  return () => clearTimeout(timer)
}

/** Why a call's signal fired, told apart from the caller's own abort. */
class CallTimeout extends Error {}

/** @internal One tool's calls: send, follow the task, map its end onto a tool result. */
class RemoteCall {
  readonly #client: A2AClient
  readonly #s: CallSettings

  constructor(client: A2AClient, settings: CallSettings) {
    this.#client = client
    this.#s = settings
  }

  async call(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    const prompt = typeof args.prompt === "string" ? args.prompt : ""
    if (!prompt) return this.#error('needs a "prompt" string')
    const deadline = new AbortController()
    const disarm = (this.#s.seams.deadline ?? timerDeadline)(this.#s.callTimeoutMs, () =>
      deadline.abort(new CallTimeout()),
    )
    const signal = ctx.signal ? AbortSignal.any([ctx.signal, deadline.signal]) : deadline.signal
    const view = new TaskView()
    try {
      return await this.#run(prompt, ctx, view, signal)
    } catch (error) {
      if (!signal.aborted) return this.#error(messageOf(error))
      if (view.id) await this.#cancel(view.id)
      const timedOut = deadline.signal.aborted
      const task = view.id ? `task ${view.id} ` : ""
      return this.#error(
        timedOut
          ? `${task}timed out after ${this.#s.callTimeoutMs} ms`
          : `${task}canceled: the call was aborted`,
        view,
      )
    } finally {
      disarm()
    }
  }

  async #run(prompt: string, ctx: ToolContext, view: TaskView, signal: AbortSignal): Promise<ToolResult> {
    const continued = this.#continuedRequest(ctx)
    if (continued && ctx.answer && !ctx.answer.ok) {
      // The loop applied a decline: the remote task would wait for its input forever.
      view.id = continued.data?.taskId as string
      if (typeof continued.data?.contextId === "string") view.contextId = continued.data.contextId
      await this.#cancel(view.id, view)
      const reason = ctx.answer.reason ? ` (${ctx.answer.reason})` : ""
      return this.#declined(`${continued.prompt}${reason}`, view)
    }
    if (continued && ctx.answer) {
      const taskId = continued.data?.taskId as string
      const contextId = typeof continued.data?.contextId === "string" ? continued.data.contextId : ""
      view.id = taskId
      view.contextId = contextId
      const asked = messageIdOf(continued.data?.message)
      if (continued.kind === "authorization") {
        // The login may have moved the task on already; a follow-up then would be a second turn.
        view.takeTask(await this.#client.getTask({ tenant: "", id: taskId, historyLength: 0 }, { signal }))
        if (view.state === "auth-required" && view.statusMessage?.messageId === asked)
          await this.#send(followUp(continued, ctx.answer, view, "authorized"), view, signal, asked)
        else await this.#settle(view, signal, undefined)
      } else await this.#send(followUp(continued, ctx.answer, view), view, signal, asked)
    } else {
      await this.#send(firstMessage(prompt, ctx.idempotencyKey), view, signal, undefined)
    }
    for (;;) {
      if (view.reply) return this.#ok(partsText(view.reply.parts, "\n"), view)
      if (view.state === "completed") return this.#ok(view.artifactsText() || view.statusText(), view)
      if (isTerminal(view.state)) {
        const status = view.statusText()
        return this.#error(`task ${view.id} ${view.state}${status ? `: ${status}` : ""}`, view)
      }
      if (!isInterrupted(view.state))
        return this.#error(`task ${view.id} ended the call in state ${view.state}`, view)
      const request = this.#requestOf(view)
      if (!ctx.resolve) return pending(request)
      const answer = await raceSignal(ctx.resolve(request), signal)
      if (!answer.ok) {
        await this.#cancel(view.id)
        return this.#declined(request.prompt, view)
      }
      const asked = view.statusMessage?.messageId
      const text = request.kind === "authorization" ? "authorized" : undefined
      await this.#send(followUp(request, answer, view, text), view, signal, asked)
    }
  }

  /** The request this retry answers (approved or declined), when it is one of this agent's task interruptions. */
  #continuedRequest(ctx: ToolContext): Request | undefined {
    const request = ctx.request
    if (!ctx.answer || !request || request.id !== ctx.answer.id) return undefined
    const data = request.data
    if (typeof data?.taskId !== "string" || data.agent !== this.#s.agent) return undefined
    return request
  }

  /**
   * Sends `message` and follows the task until it ends or waits for the caller. `asked` is
   * the status message id of the interruption this message answers: until the status moves
   * past it, an interrupted state is the old one (the task as it was when the message landed).
   */
  async #send(
    message: Message,
    view: TaskView,
    signal: AbortSignal,
    asked: string | undefined,
  ): Promise<void> {
    const params = {
      tenant: "",
      message,
      configuration: {
        acceptedOutputModes: ["text/plain", "application/json"],
        taskPushNotificationConfig: undefined,
        returnImmediately: !this.#s.streaming,
      },
      metadata: undefined,
    }
    if (this.#s.streaming) {
      for await (const event of this.#client.sendMessageStream(params, { signal })) {
        const known = view.id
        view.take(event)
        if (!known && view.id) this.#s.seams.onTask?.(view.id)
        if (view.reply || this.#settled(view, asked)) return
      }
      // A stream that ended early: the task itself says where it is.
      if (view.id) await this.#settle(view, signal, asked)
      return
    }
    const result = await this.#client.sendMessage(params, { signal })
    if ("parts" in result && "role" in result) {
      view.reply = result as Message
      return
    }
    const known = view.id
    view.takeTask(result as Parameters<TaskView["takeTask"]>[0])
    if (!known && view.id) this.#s.seams.onTask?.(view.id)
    await this.#settle(view, signal, asked)
  }

  /** Reads the task every `pollIntervalMs` until it ends or waits for the caller. */
  async #settle(view: TaskView, signal: AbortSignal, asked: string | undefined): Promise<void> {
    while (!this.#settled(view, asked)) {
      await sleep(this.#s.pollIntervalMs, signal)
      view.takeTask(await this.#client.getTask({ tenant: "", id: view.id, historyLength: 0 }, { signal }))
    }
  }

  #settled(view: TaskView, asked: string | undefined): boolean {
    if (isTerminal(view.state)) return true
    return isInterrupted(view.state) && (asked === undefined || view.statusMessage?.messageId !== asked)
  }

  async #cancel(taskId: string, view?: TaskView): Promise<void> {
    try {
      const task = await this.#client.cancelTask(
        { tenant: "", id: taskId, metadata: undefined },
        { signal: AbortSignal.timeout(Math.min(this.#s.callTimeoutMs, 5_000)) },
      )
      view?.takeTask(task)
    } catch {
      // Best effort: the call's own result already says why it stopped.
    }
  }

  #requestOf(view: TaskView): Request {
    const auth = view.state === "auth-required"
    const prompt = this.#s.redact(view.statusText() || `${this.#s.agent} needs input`)
    const data: Record<string, unknown> = { agent: this.#s.agent, taskId: view.id, contextId: view.contextId }
    const message = view.statusMessageJson()
    if (message) data.message = message
    const url = auth ? loginUrl(view) : undefined
    return pending({ kind: auth ? "authorization" : "input", prompt, data, ...(url ? { url } : {}) }).metadata
      ?.pending as Request
  }

  #metadata(view: TaskView): Record<string, unknown> {
    return { agent: this.#s.agent, taskId: view.id, contextId: view.contextId, state: view.state }
  }

  #ok(output: string, view: TaskView): ToolResult {
    return { output: this.#s.redact(output), isError: false, metadata: this.#metadata(view) }
  }

  #declined(prompt: string, view: TaskView): ToolResult {
    return { output: this.#s.redact(`declined: ${prompt}`), isError: true, metadata: this.#metadata(view) }
  }

  /** An error result; the remote's words in `reason` (an echoed key, say) are redacted. */
  #error(reason: string, view?: TaskView): ToolResult {
    const result: ToolResult = {
      output: this.#s.redact(`a2a agent ${JSON.stringify(this.#s.agent)}: ${reason}`),
      isError: true,
    }
    if (view?.id) result.metadata = this.#metadata(view)
    return result
  }
}

function firstMessage(prompt: string, idempotencyKey: string | undefined): Message {
  return {
    // From the idempotency key, so a crash-retry repeats the same message, never a new one.
    messageId: idempotencyKey ?? randomUUID(),
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [textPart(prompt)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }
}

function followUp(request: Request, answer: Answer, view: TaskView, text?: string): Message {
  const answerData = answer.data
  const said = text ?? (typeof answerData?.text === "string" ? answerData.text : "yes")
  const decision: Record<string, unknown> = { ok: true }
  if (answerData && text === undefined) decision.data = answerData
  return {
    // The request id: one decision, one message, whichever process sends it.
    messageId: request.id,
    contextId: view.contextId,
    taskId: view.id,
    role: Role.ROLE_USER,
    parts: [textPart(said), dataPart({ answer: decision })],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }
}

function loginUrl(view: TaskView): string | undefined {
  const parts = view.statusMessage?.parts ?? []
  const url = firstData(parts)?.url
  if (typeof url === "string" && /^https?:\/\//.test(url)) return url
  return /https?:\/\/[^\s<>"']+/.exec(partsText(parts, "\n"))?.[0]
}

function messageIdOf(message: unknown): string | undefined {
  const id = (message as { messageId?: unknown } | undefined)?.messageId
  return typeof id === "string" ? id : undefined
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    signal.addEventListener("abort", onAbort, { once: true })
  })
}

function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener("abort", onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort)
        resolve(value)
      },
      (error) => {
        signal.removeEventListener("abort", onAbort)
        reject(error)
      },
    )
  })
}
