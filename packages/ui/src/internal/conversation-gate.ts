import {
  type Answer,
  AnswerConflictError,
  EngineRunError,
  type Prompt,
  type Request as PendingRequest,
  type RunHost,
  type StreamEvent,
  type HostRelayOptions,
  type Usage,
  assertAnswer,
  pendingOfRun,
  runIdOfEntry,
} from "@toolnexus/core"
import { hostOf } from "./chat-host.js"
import type { ChatHandlerOptions } from "./chat-options.js"
import { isConversationId } from "./conversation-id.js"
import { Refusal, badRequest, conflict } from "./http-error.js"
import {
  MAX_BODY_DEPTH,
  allowedOriginsOf,
  crossSiteRefusal,
  mayNestDeeperThan,
  nestsDeeperThan,
} from "./post-checks.js"
import type { HandlerInput } from "./reply.js"

/** What a run reports at its end, whichever way it was started (a `RunResult`, or a runtime's `TaskResult`). */
export interface RunOutcome {
  status: string
  limit?: string | undefined
  finishReason?: string | undefined
  usage?: Usage | undefined
  /** The request the run parked on, when `status` is `"pending"`. */
  pending?: { id: string } | undefined
}

/** @internal A run the gate accepted: start it with a listener for its events. */
export interface AcceptedRun {
  execute(onEvent: (ev: StreamEvent) => void): Promise<RunOutcome>
  /** For an answer: the request it answers. */
  request?: PendingRequest
}

/** How many request holders a handler remembers (the newest; see `#holders`). */
const HOLDERS_CAP = 10_000

/**
 * @internal Decides, before any run starts, whether a post's answer or prompt may run on a
 * conversation, and hands it to the host: new turns are `host.send` (`host.start` for a new
 * chat), answers `host.deliverAnswer`. The host decides each request once (claims, expiry,
 * conflicts); the gate only checks that the request is this conversation's.
 */
export class ConversationGate {
  readonly #host: RunHost
  /** The host is the shorthand's store host: its result waits end by themselves (see `settle`). */
  readonly #settlesHere: boolean
  readonly #agent: string
  readonly #opts: ChatHandlerOptions
  readonly #allowedOrigins: ReadonlySet<string>
  /**
   * The conversation that held each request this handler saw open (an answer's check, a run
   * that parked): a host keeps a decided request's decision but not who held it, and only
   * that conversation may learn it. Bounded: it serves recent replays, not weeks of them.
   */
  readonly #holders = new Map<string, string>()

  constructor(opts: ChatHandlerOptions) {
    this.#allowedOrigins = allowedOriginsOf(opts.allowedOrigins)
    const { host, agent, settlesHere } = hostOf(opts)
    this.#host = host
    this.#settlesHere = settlesHere === true
    this.#agent = agent
    this.#opts = opts
  }

  /**
   * The conversation id of a chat: `conversationId(chatId, req)` or the chat id (1–200
   * characters). `req.request()` is called only for `conversationId`: the Node edge builds no
   * `Request` otherwise.
   */
  async conversationOf(
    chatId: string,
    req: Pick<HandlerInput, "request">,
  ): Promise<string | Response | Refusal> {
    const id = this.#opts.conversationId ? await this.#opts.conversationId(chatId, req.request()) : chatId
    if (id instanceof Response) return id
    if (!isConversationId(id))
      return new Refusal(400, "TNX_BAD_REQUEST", "the chat id must be a string of 1 to 200 characters")
    return id
  }

  /**
   * A post's body read by `parse`, with the conversation of its chat id; or the refusal the
   * handler logs and sends (a cross-site post; a body that is not JSON, nests deeper than a
   * store can write, or is not the protocol's), or `conversationId`'s own `Response`.
   */
  async openPost<T>(
    req: HandlerInput,
    parse: (body: unknown) => T | Refusal,
    chatIdOf: (post: T) => string,
  ): Promise<{ post: T; conversation: string } | Refusal | Response> {
    const crossSite = crossSiteRefusal(req, this.#allowedOrigins)
    if (crossSite) return crossSite
    let body: unknown
    let text: string
    try {
      // text() then JSON.parse: cheaper than json() on Node 20's Request.
      text = await req.text()
      body = JSON.parse(text)
    } catch {
      return badRequest("the body is not JSON")
    }
    // Before anything is read or claimed: an answer no store can write is refused here, not
    // after its claim as a streamed TNX_STORE error. A text too short to nest that deep is not walked.
    if (mayNestDeeperThan(text, MAX_BODY_DEPTH) && nestsDeeperThan(body, MAX_BODY_DEPTH))
      return badRequest(
        `the body nests objects and arrays deeper than ${MAX_BODY_DEPTH} levels, more than a store can write`,
      )
    const post = parse(body)
    if (post instanceof Refusal) return post
    const conversation = await this.conversationOf(chatIdOf(post), req)
    if (conversation instanceof Response) return conversation
    if (conversation instanceof Refusal) return conversation
    return { post, conversation }
  }

  /**
   * The request conversation `id` waits on, if any: the host's open request held by that run
   * (a runtime's key, else its conversation, as the host routes answers).
   */
  async pendingOf(id: string): Promise<PendingRequest | undefined> {
    return (await pendingOfRun(this.#host, id))[0]?.request
  }

  /**
   * A new user turn: `host.send`, or `host.start` for a conversation the host has no run of.
   * While the conversation waits on a request the host throws `ConversationPendingError`
   * before any event, which `startRun` makes the 409.
   *
   * `firstTurn` is the post's hint that the chat is new (its only message is this one): then
   * `host.start` is tried first, and `host.send` only when a run of the conversation exists
   * already (`started: false`). Either order does the same; the hint only picks the one that
   * costs a new chat no failed record read and no error, and a later turn no failed create.
   * Posted history is never trusted for more than this choice.
   */
  turn(id: string, prompt: Prompt, relay?: HostRelayOptions, firstTurn = false): AcceptedRun {
    const host = this.#host
    return {
      execute: async (onEvent) => {
        const seen = outcomeListener(onEvent)
        const opts = relay === undefined ? { onEvent: seen.listener } : { onEvent: seen.listener, relay }
        if (firstTurn) {
          const started = await host.start(this.#agent, id, prompt, opts)
          if (started.started) return this.#parked(id, await settle(host, id, seen, this.#settlesHere))
        } else {
          let sent = true
          try {
            await host.send(id, prompt, opts)
          } catch (error) {
            if (seen.any || !EngineRunError.isInstance(error) || error.runId !== id) throw error
            // No run of this conversation yet: start one (a concurrent start makes this a turn).
            const started = await host.start(this.#agent, id, prompt, opts)
            if (started.started) return this.#parked(id, await settle(host, id, seen, this.#settlesHere))
            sent = false
          }
          // Outside the `try`: a failure the settling reports is the turn's, never "no run yet".
          if (sent) return this.#parked(id, await settle(host, id, seen, this.#settlesHere))
        }
        await host.send(id, prompt, opts)
        return this.#parked(id, await settle(host, id, seen, this.#settlesHere))
      },
    }
  }

  /** An answer to a request of conversation `id`: validated, checked to be this conversation's, delivered. */
  async answer(id: string, raw: unknown, relay?: HostRelayOptions): Promise<AcceptedRun | Refusal> {
    try {
      assertAnswer(raw)
    } catch (error) {
      return new Refusal(400, "TNX_ANSWER_INVALID", (error as Error).message)
    }
    const answer = raw as Answer
    const host = this.#host
    const entry = await host.findRequest(answer.id)
    if (entry === undefined) {
      // No longer open (or never was): its decision is told only to the conversation that held it.
      if (this.#holders.get(answer.id) !== id) return unknown(answer.id, id)
      const decision = await host.getDecision(answer.id)
      if (decision !== undefined)
        return conflict(answer.id, `request ${answer.id} was already decided`, decision)
      return unknown(answer.id, id)
    }
    // A saved runtime's request is held by its deepest handle's conversation, not by the chat's:
    // the chat answers it when its conversation id is the runtime's key. Any other chat gets
    // the 404 a foreign request gets, so `conversationId` scopes runtimes to users as well.
    if (runIdOfEntry(entry) !== id) return unknown(answer.id, id)
    this.#hold(answer.id, id)
    return {
      request: entry.request,
      execute: async (onEvent) => {
        const seen = outcomeListener(onEvent, answer.id)
        // A saved runtime's tree runs its defs' toolkits: the caller's tools reach conversations only.
        const own = relay !== undefined && entry.runtimeKey === undefined ? { relay } : {}
        try {
          const delivered = await host.deliverAnswer(answer, { onEvent: seen.listener, ...own })
          return this.#parked(id, await settle(host, delivered.runId, seen, this.#settlesHere))
        } catch (error) {
          // Decided elsewhere while this post was checked: its decision, once known.
          if (AnswerConflictError.isInstance(error) && error.decision === undefined) {
            const decision = await host.getDecision(answer.id).catch(() => undefined)
            if (decision !== undefined)
              throw new AnswerConflictError(answer.id, "it was already applied", { decision })
          }
          throw error
        }
      },
    }
  }

  /**
   * The events of conversation `id`'s run in flight in this process, from its first (the host's
   * `events(runId, { fromStart: true })`); `undefined` when none is (or the host streams none here).
   */
  async replay(id: string): Promise<AsyncIterator<StreamEvent> | undefined> {
    try {
      const iterator = this.#host.events(id, { fromStart: true })[Symbol.asyncIterator]()
      const first = await iterator.next()
      if (first.done) return undefined
      // The first event, read to learn whether there is a run, is handed back first.
      let head: IteratorResult<unknown> | undefined = first
      return {
        next: async () => {
          const next = head ?? (await iterator.next())
          head = undefined
          return next as IteratorResult<StreamEvent>
        },
        return: async () => {
          await iterator.return?.()
          return { done: true, value: undefined }
        },
      }
    } catch {
      // An engine's connection streams in its workers: nothing to replay here.
      return undefined
    }
  }

  /** Notes the request a run of conversation `id` parked on as that conversation's. */
  #parked(id: string, outcome: RunOutcome): RunOutcome {
    if (typeof outcome.pending?.id === "string") this.#hold(outcome.pending.id, id)
    return outcome
  }

  #hold(requestId: string, conversation: string): void {
    const holders = this.#holders
    holders.delete(requestId)
    holders.set(requestId, conversation)
    if (holders.size > HOLDERS_CAP) holders.delete(holders.keys().next().value as string)
  }
}

/**
 * A listener passing events on and keeping the run's own `done` result (a saved runtime's
 * handles end with `done` events naming their handle: those are not the delivery's end).
 */
function outcomeListener(onEvent: (ev: StreamEvent) => void, answered?: string) {
  let resolve: (outcome: RunOutcome) => void = () => {}
  const ended = (outcome: RunOutcome) => {
    seen.first ??= outcome
    resolve(outcome)
  }
  const seen = {
    any: false,
    outcome: undefined as RunOutcome | undefined,
    /** What `ended` resolved with, once it has: the run ended or parked before `settle` looked. */
    first: undefined as RunOutcome | undefined,
    /** Resolves at the run's own `done`, or at a `pending` (the run parked). */
    ended: new Promise<RunOutcome>((r) => {
      resolve = r
    }),
    listener: (ev: unknown) => {
      const event = ev as StreamEvent
      seen.any = true
      onEvent(event)
      if (event.type === "done" && !("handle" in event)) {
        seen.outcome = event.result as RunOutcome
        ended(seen.outcome)
      } else if (event.type === "pending") {
        // A worker replaying a resumed turn on an engine repeats the answered park's event: not the end.
        const id = (event.request as { id: string }).id
        if (id !== answered) ended({ status: "pending", pending: { id } })
      }
    },
  }
  return seen
}

/**
 * The outcome of a run a post drives: its own `done`, else its result. An engine's `result`
 * resolves only at the run's end and its `onEvent` trails the call that started or resumed the
 * run, so a park is known by its `pending` event; a store host's result resolves at the park,
 * and its `done` (with the run's usage) is preferred when both are in.
 */
async function settle(
  host: RunHost,
  runId: string,
  seen: ReturnType<typeof outcomeListener>,
  settlesHere: boolean,
) {
  // The result's wait ends with this post when the run parked: an engine's would otherwise hold
  // a call (or a poll) open until the parked run ends, days later. A run that ended is left to
  // resolve its wait by itself (it is about to): aborting one costs an `AbortError` and an
  // abort event a turn. The shorthand's store host resolves it at the end or park in this
  // process: its wait gets no signal at all (no controller, no listener a turn).
  let done: AbortController | undefined
  let release = true
  try {
    // Its events already ended or parked the run (a store host's `send` resolves after the run):
    // the race below would pick that outcome, so the host's result is not asked for.
    let first = seen.first
    if (first === undefined) {
      if (!settlesHere) done = new AbortController()
      const result = resultOf(host, runId, done?.signal)
      // Observed either way: the losing side must not surface as an unhandled rejection.
      result.catch(() => undefined)
      first = await Promise.race([result, seen.ended])
    }
    // A client's run ends its events with `done` (after the result, on an engine): wait for it,
    // so the client gets the whole turn. A runtime's `TaskResult` (no `toolCallCount`) has no
    // own `done`: its handles' events end with theirs.
    if (seen.outcome === undefined && first.status !== "pending" && "toolCallCount" in first) await seen.ended
    // Parked: the request reaches the client once the host lists it (an engine's event log can
    // lead its request index), so an answer posted at once finds it. The live tail ends there.
    if (first.status === "pending") for await (const _ of host.events(runId)) void _
    else release = false
    return seen.outcome ?? first
  } finally {
    if (release) done?.abort(POST_OVER)
  }
}

/** Why a door's result wait was released: its post is over (a constant, no `DOMException` a turn). */
const POST_OVER = new Error("the post that waited for this result is over")

/** The run's result; a failure of the run in this process rejects with its own error. */
async function resultOf(host: RunHost, runId: string, signal: AbortSignal | undefined): Promise<RunOutcome> {
  try {
    return (await host.result(runId, signal === undefined ? undefined : { signal })) as RunOutcome
  } catch (error) {
    const cause = EngineRunError.isInstance(error) ? (error as { cause?: unknown }).cause : undefined
    throw cause ?? error
  }
}

function unknown(requestId: string, conversationId: string): Refusal {
  return new Refusal(
    404,
    "TNX_UNKNOWN_REQUEST",
    `unknown request ${JSON.stringify(requestId)}: conversation ${JSON.stringify(conversationId)} does not wait on it`,
    { requestId },
  )
}
