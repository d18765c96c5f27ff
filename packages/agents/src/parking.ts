import {
  type Answer,
  type ConversationStore,
  type EndpointStyle,
  type Request,
  UnknownRequestError,
} from "@toolnexus/core"
import type { Execution } from "./execution.js"
import { appliedBefore, continueHalted, haltedOn } from "./handle-conversation.js"
import type { HandleRecord } from "./handle-record.js"
import { applyTransition } from "./handle-state.js"
import type { EventHub } from "./runtime-events.js"
import type { Trace } from "./trace.js"

/** Options of `Runtime.resume`. */
export interface ResumeOptions {
  /** A durable store's claim token, passed to the cascade's last save (it fences and consumes it). */
  claim?: string
  /** Aborts the cascade's runs, e.g. when a durable claim could not be renewed. */
  signal?: AbortSignal
  /** The answer was accepted before the request's `expiresAt`: it is not checked again. */
  expiryChecked?: boolean
}

/** @internal What parking and resuming handles needs from the runtime. */
export interface ParkingContext {
  readonly store: ConversationStore
  readonly trace: Trace
  readonly events: EventHub
  readonly execution: Execution
  readonly root: HandleRecord
  /** The store id of a handle's conversation. */
  conversationId(r: HandleRecord): string
  /** The model and style a handle's transcript was written with. */
  transcriptOf(r: HandleRecord): { model: string; style: EndpointStyle }
}

/**
 * @internal Durably suspended handles, indexed by the id of the request they wait on, and
 * the two ways out: `resume` with the answer, or `cancel` by interrupt/close.
 */
export class Parking {
  readonly #ctx: ParkingContext
  /** A single holder is kept as itself: an array per parked handle is about 56 B. */
  readonly #byRequest = new Map<string, HandleRecord | HandleRecord[]>()

  constructor(ctx: ParkingContext) {
    this.#ctx = ctx
  }

  /** Indexes a suspended (not inline) handle under its pending request id. */
  park(r: HandleRecord): void {
    const id = r.pending?.id
    if (id === undefined) return
    const holders = this.#byRequest.get(id)
    if (holders === undefined) this.#byRequest.set(id, r)
    else if (Array.isArray(holders)) holders.push(r)
    else this.#byRequest.set(id, [holders, r])
  }

  /**
   * Continues the tree parked on `answer.id`: the deepest holder first, from its halted tool
   * call; then each ancestor parked on the same request, its halted `task` call reattaching
   * to the child it already has. Resolves when the cascade has settled. `claim` (a durable
   * store's claim token) goes to the topmost holder's save, the last of the cascade;
   * `signal` aborts every handle's run of the cascade (a durable resume whose claim was
   * lost); `expiryChecked` says the answer was accepted before the request's `expiresAt`.
   *
   * @throws UnknownRequestError when no parked handle holds `answer.id`.
   */
  async resume(answer: Answer, opts?: ResumeOptions): Promise<void> {
    let target: HandleRecord | undefined
    for (const r of this.#holders(answer.id)) {
      if (!target || depth(r) > depth(target)) target = r
    }
    if (!target) throw new UnknownRequestError(answer.id, "no suspended handle holds it")
    const { store, trace, events, execution, root } = this.#ctx
    const cascade: HandleRecord[] = []
    for (let r: HandleRecord | undefined = target; r && r !== root; r = r.parent) {
      if (r.state !== "suspended" || r.inline || r.pending?.id !== answer.id) break
      cascade.push(r)
    }
    for (const [i, handle] of cascade.entries()) {
      const pending = haltedOn(handle.shown(handle.pending as Request), cascade[i - 1])
      // Only the last save of the cascade consumes the claim.
      const claim = i === cascade.length - 1 ? opts?.claim : undefined
      const id = this.#ctx.conversationId(handle)
      this.#unpark(handle)
      applyTransition(handle, "unpark", trace, events)
      applyTransition(handle, "start", trace, events)
      await execution.run(handle, async (client, toolkit, signal, onEvent) => {
        const recorded = await appliedBefore(store, id, answer.id, this.#ctx.transcriptOf(handle))
        if (recorded) {
          trace.note(`${handle.id}: resume → RECOVERED from the store (the answer was applied before)`)
          return recorded
        }
        const outer = opts?.signal
        return continueHalted(id, client, {
          toolkit,
          pending,
          answer,
          signal: outer ? AbortSignal.any([signal, outer]) : signal,
          onEvent,
          claim,
          expiryChecked: opts?.expiryChecked,
        })
      })
    }
  }

  /**
   * Cancels a parked handle's request (interrupt or close): its waiters get `status`, and its
   * next run declines the request first. An interrupted handle becomes idle; a closing one
   * is closed by the caller.
   */
  cancel(r: HandleRecord, status: "interrupted" | "closed"): void {
    this.#unpark(r)
    r.cancelled = r.pending && r.shown(r.pending)
    r.pending = undefined
    r.lastResult = r.result(status, "", true)
    if (status === "interrupted") applyTransition(r, "cancel", this.#ctx.trace, this.#ctx.events)
    r.notify(r.lastResult)
  }

  #holders(id: string): readonly HandleRecord[] {
    const holders = this.#byRequest.get(id)
    if (holders === undefined) return []
    return Array.isArray(holders) ? holders : [holders]
  }

  #unpark(r: HandleRecord): void {
    const id = r.pending?.id
    if (id === undefined) return
    const rest = this.#holders(id).filter((h) => h !== r)
    if (rest.length === 0) this.#byRequest.delete(id)
    else this.#byRequest.set(id, rest.length === 1 ? (rest[0] as HandleRecord) : rest)
  }
}

function depth(r: HandleRecord): number {
  return r.id.split("/").length
}
