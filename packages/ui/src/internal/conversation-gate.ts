import {
  type Answer,
  AnswerConflictError,
  type AnswerDecision,
  type Client,
  ConfigError,
  type ConversationStore,
  type Prompt,
  type Request as PendingRequest,
  type StreamEvent,
  type Toolkit,
  type Usage,
  assertAnswer,
  answerExpired,
} from "@toolnexus/core"
import type { ChatHandlerOptions } from "./chat-options.js"
import { isConversationId } from "./conversation-id.js"
import { Refusal, badRequest, conflict } from "./http-error.js"
import { MAX_BODY_DEPTH, allowedOriginsOf, crossSiteRefusal, nestsDeeperThan } from "./post-checks.js"
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

/** The subset of a durable store the gate reads (duck-typed: `@toolnexus/durable` is loaded only for one). */
interface DurableLike extends ConversationStore {
  getPending(id: string): Promise<PendingRequest | undefined>
  findRequest(
    requestId: string,
  ): Promise<{ request: PendingRequest; conversationId: string; runtimeKey?: string } | undefined>
  getDecision(requestId: string): Promise<AnswerDecision | undefined>
  claimAnswer(...args: unknown[]): Promise<unknown>
}

function isDurable(store: ConversationStore): store is DurableLike {
  const s = store as Partial<DurableLike>
  return (
    typeof s.findRequest === "function" &&
    typeof s.getDecision === "function" &&
    typeof s.claimAnswer === "function" &&
    typeof s.getPending === "function"
  )
}

/** A decision, with the conversation whose request it decided: only that one may learn it. */
interface OwnedDecision {
  conversation: string
  decision: AnswerDecision
}

/**
 * Answers being applied in this process, by request id, with their decision: a second post
 * of the same conversation while the first is still running is refused with the first
 * decision, on every store. With the memory store it is the claim itself (kept after
 * success: the decision is final).
 */
const inFlight = new Map<string, OwnedDecision>()
/** Decisions applied through memory stores, per store (a durable store keeps its own). */
const applied = new WeakMap<ConversationStore, Map<string, OwnedDecision>>()
/**
 * The conversation of each durable request this process saw held: found open by an answer's
 * checks, or parked on by a run it streamed. A durable store keeps a decided request's
 * decision but not who held it: a post naming a request that is no longer open learns its
 * decision only when this map says its conversation held it.
 */
const owners = new Map<string, string>()
const APPLIED_CAP = 10_000

/** Adds to a map that forgets its oldest entries beyond `APPLIED_CAP`. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key)
  map.set(key, value)
  // The oldest go first: these serve one process's recent posts, not weeks of them.
  if (map.size > APPLIED_CAP) map.delete(map.keys().next().value as string)
}

/** Notes the request a run of conversation `id` parked on as that conversation's. */
function noteParked<R extends RunOutcome>(id: string, outcome: R): R {
  if (typeof outcome.pending?.id === "string") remember(owners, outcome.pending.id, id)
  return outcome
}

function decisionOf(answer: Answer): AnswerDecision {
  if (answer.ok) return { ok: true }
  return answer.reason === undefined ? { ok: false } : { ok: false, reason: answer.reason }
}

function rememberApplied(store: ConversationStore, requestId: string, decided: OwnedDecision): void {
  let map = applied.get(store)
  if (!map) {
    map = new Map()
    applied.set(store, map)
  }
  remember(map, requestId, decided)
}

type DurableModule = typeof import("@toolnexus/durable")
type DurableStoreOf<M extends DurableModule> = Parameters<M["deliverAnswer"]>[0]
let durableModule: Promise<DurableModule> | undefined

function loadDurable(): Promise<DurableModule> {
  durableModule ??= import("@toolnexus/durable").catch((cause: unknown) => {
    durableModule = undefined
    throw new ConfigError(
      "a durable store needs @toolnexus/durable installed (an optional peer of @toolnexus/ui)",
      {
        cause,
      },
    )
  })
  return durableModule
}

/**
 * @internal Decides, before any run starts, whether a post's answer or prompt may run on a
 * conversation, and how: the one place both protocols read the server's transcript state.
 */
export class ConversationGate {
  readonly #client: Client
  readonly #opts: ChatHandlerOptions
  readonly #store: ConversationStore & { getPending(id: string): Promise<PendingRequest | undefined> }
  readonly #allowedOrigins: ReadonlySet<string>

  constructor(opts: ChatHandlerOptions) {
    if (opts.client === undefined || typeof opts.client.conversationStore !== "function")
      throw new ConfigError("`client` must be a toolnexus Client")
    const store = opts.client.conversationStore()
    if (opts.store !== undefined && opts.store !== store)
      throw new ConfigError(
        "`store` must be the client's own store (client.conversationStore()): the chat's transcript lives there",
      )
    if (typeof store.getPending !== "function")
      throw new ConfigError(
        "the client's store must implement getPending (the chat must know what it waits on)",
      )
    this.#allowedOrigins = allowedOriginsOf(opts.allowedOrigins)
    this.#client = opts.client
    this.#opts = opts
    this.#store = store as ConversationStore & { getPending(id: string): Promise<PendingRequest | undefined> }
  }

  /**
   * The conversation id of a chat: `conversationId(chatId, req)` or the chat id (1–200
   * characters). `req` is called only for `conversationId`: the Node edge builds no `Request` otherwise.
   */
  async conversationOf(chatId: string, req: () => Request): Promise<string | Response | Refusal> {
    const id = this.#opts.conversationId ? await this.#opts.conversationId(chatId, req()) : chatId
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
    try {
      // text() then JSON.parse: cheaper than json() on Node 20's Request.
      body = JSON.parse(await req.text())
    } catch {
      return badRequest("the body is not JSON")
    }
    // Before anything is read or claimed: an answer no store can write is refused here, not
    // after its claim as a streamed TNX_STORE error.
    if (nestsDeeperThan(body, MAX_BODY_DEPTH))
      return badRequest(
        `the body nests objects and arrays deeper than ${MAX_BODY_DEPTH} levels, more than a store can write`,
      )
    const post = parse(body)
    if (post instanceof Refusal) return post
    const conversation = await this.conversationOf(chatIdOf(post), req.request)
    if (conversation instanceof Response) return conversation
    if (conversation instanceof Refusal) return conversation
    return { post, conversation }
  }

  /** The request conversation `id` waits on, if any. */
  pendingOf(id: string): Promise<PendingRequest | undefined> {
    return this.#store.getPending(id)
  }

  /**
   * A new user turn. While the conversation waits on a request, `client.ask` throws
   * `ConversationPendingError` before any event, which `startRun` makes the 409: the store is
   * read once a turn, by the run itself.
   */
  turn(id: string, prompt: Prompt, toolkitOverride?: Toolkit): AcceptedRun {
    const toolkit = toolkitOverride ?? this.#opts.toolkit
    return {
      execute: async (onEvent) =>
        noteParked(id, await this.#client.ask(prompt, { id, ...(toolkit ? { toolkit } : {}), onEvent })),
    }
  }

  /** An answer to a request of conversation `id`: validated, checked against the store, claimed once. */
  async answer(id: string, raw: unknown, toolkitOverride?: Toolkit): Promise<AcceptedRun | Refusal> {
    try {
      assertAnswer(raw)
    } catch (error) {
      return new Refusal(400, "TNX_ANSWER_INVALID", (error as Error).message)
    }
    const answer = raw as Answer
    const store = this.#store
    // Another conversation's answer in flight tells this one nothing: the owner checks below 404 it.
    const running = inFlight.get(answer.id)
    if (running !== undefined && running.conversation === id)
      return conflict(
        answer.id,
        `the answer to request ${answer.id} is being applied by another post`,
        running.decision,
      )
    const toolkit = toolkitOverride ?? this.#opts.toolkit
    return isDurable(store)
      ? this.#durableAnswer(store, id, answer, toolkit)
      : this.#memoryAnswer(id, answer, toolkit)
  }

  async #durableAnswer(
    store: DurableLike,
    id: string,
    answer: Answer,
    toolkit: Toolkit | undefined,
  ): Promise<AcceptedRun | Refusal> {
    const entry = await store.findRequest(answer.id)
    if (entry === undefined) {
      // No longer open (or never was): its decision is read only for the conversation that held it.
      if (owners.get(answer.id) !== id) return unknown(answer.id, id)
      const decision = await store.getDecision(answer.id)
      if (decision !== undefined)
        return conflict(answer.id, `request ${answer.id} was already decided`, decision)
      return unknown(answer.id, id)
    }
    // A saved runtime's request is held by its deepest handle's conversation, not by the chat's:
    // the chat answers it when its conversation id is the runtime's key. Any other chat gets
    // the 404 a foreign request gets, so `conversationId` scopes runtimes to users as well.
    const owner = entry.runtimeKey ?? entry.conversationId
    if (owner !== id) return unknown(answer.id, id)
    remember(owners, answer.id, id)
    const expired = expiredRefusal(entry.request, answer)
    if (expired) return expired
    const { client } = this
    const { runtime } = this.#opts
    return {
      request: entry.request,
      execute: async (onEvent) => {
        const durable = await loadDurable()
        // Checked again after the last await: two posts of this process never both deliver.
        const running = inFlight.get(answer.id)
        if (running !== undefined)
          throw new AnswerConflictError(answer.id, "it is being applied by another post", {
            decision: running.decision,
          })
        inFlight.set(answer.id, { conversation: id, decision: decisionOf(answer) })
        try {
          const delivered = await durable.deliverAnswer(
            store as unknown as DurableStoreOf<DurableModule>,
            answer,
            {
              client,
              ...(toolkit ? { toolkit } : {}),
              ...(runtime ? { runtime } : {}),
              onEvent,
            },
          )
          return noteParked(id, delivered.result)
        } catch (error) {
          // Another process holds the claim: its decision is known once it is applied.
          if (AnswerConflictError.isInstance(error) && error.decision === undefined) {
            const decision = await store.getDecision(answer.id).catch(() => undefined)
            if (decision !== undefined)
              throw new AnswerConflictError(answer.id, "it was already applied", { decision })
          }
          throw error
        } finally {
          inFlight.delete(answer.id)
        }
      },
    }
  }

  async #memoryAnswer(
    id: string,
    answer: Answer,
    toolkit: Toolkit | undefined,
  ): Promise<AcceptedRun | Refusal> {
    const store = this.#store
    const pending = await store.getPending(id)
    if (pending === undefined || pending.id !== answer.id) {
      // Decided already: only the conversation that held the request learns how.
      const decided = applied.get(store)?.get(answer.id)
      if (decided !== undefined && decided.conversation === id)
        return conflict(answer.id, `request ${answer.id} was already decided`, decided.decision)
      return unknown(answer.id, id)
    }
    const expired = expiredRefusal(pending, answer)
    if (expired) return expired
    // The in-process claim: taken synchronously after the last await, so two posts cannot both pass.
    const running = inFlight.get(answer.id)
    if (running !== undefined)
      return conflict(
        answer.id,
        `the answer to request ${answer.id} is being applied by another post`,
        running.decision,
      )
    const decided: OwnedDecision = { conversation: id, decision: decisionOf(answer) }
    inFlight.set(answer.id, decided)
    return {
      request: pending,
      execute: async (onEvent) => {
        try {
          const result = await this.#client.continueRun({
            id,
            answer,
            ...(toolkit ? { toolkit } : {}),
            onEvent,
          })
          rememberApplied(store, answer.id, decided)
          return noteParked(id, result)
        } catch (error) {
          // Applied unless the conversation still waits on the same request (nothing was saved).
          const still = await store.getPending(id).catch(() => undefined)
          if (still?.id !== answer.id) rememberApplied(store, answer.id, decided)
          throw error
        } finally {
          inFlight.delete(answer.id)
        }
      },
    }
  }

  get client(): Client {
    return this.#client
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

function expiredRefusal(request: PendingRequest, answer: Answer): Refusal | undefined {
  if (!answerExpired(request, answer)) return undefined
  return new Refusal(
    410,
    "TNX_ANSWER_EXPIRED",
    `request ${request.id} expired at ${request.expiresAt}; it can only be answered { ok: false, reason: "expired" }`,
    { requestId: request.id, expiresAt: request.expiresAt },
  )
}
