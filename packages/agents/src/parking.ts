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
import type { Handle, TaskResult } from "./types.js"
import { applyTransition } from "./handle-state.js"
import type { EventHub } from "./runtime-events.js"
import type { Trace } from "./trace.js"

/**
 * Options of `Runtime.resume`: with `claim`, the context of the durable claim the answer was
 * accepted under (core's `ResumeContext`), carried by every step of the cascade.
 */
export interface ResumeOptions {
  /**
   * A durable store's claim token: the answer was accepted where the claim was decided (its
   * expiry judged there, once). It goes to the cascade's last save, which it fences and
   * consumes; the steps below run under the same claim.
   */
  claim?: string
  /** Aborts the cascade's runs, e.g. when a durable claim could not be renewed. */
  signal?: AbortSignal
}

/**
 * One open request of a runtime, as its parking index holds it: one entry per request id,
 * however many levels of the tree parked on it.
 */
export interface ParkedRequest {
  /** The request as the host sees it (with `data.path`). */
  request: Request
  /** The deepest handle holding it: the one the answer resumes first. */
  handle: Handle
  /** The deepest holder's id segments, e.g. `["root", "lead.1", "payer.1"]`. */
  path: string[]
  /** The deepest holder's conversation id in the store (the namespace applied). */
  conversationId: string
  /** The topmost handle parked on it: the cascade's last step, whose save consumes a durable claim. */
  top: Handle
  /** The topmost holder's conversation id in the store. */
  topConversationId: string
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
   * store's claim token) goes to the topmost holder's save, the last of the cascade, and
   * every step runs under it (core does not judge the answer's expiry again); `signal`
   * aborts every handle's run of the cascade (a durable resume whose claim was lost).
   *
   * Resolves with the result of the topmost handle it resumed (what that handle's `wait` gives).
   *
   * @throws UnknownRequestError when no parked handle holds `answer.id`.
   */
  async resume(answer: Answer, opts?: ResumeOptions): Promise<TaskResult> {
    const target = this.#deepest(answer.id)
    if (!target) throw new UnknownRequestError(answer.id, "no suspended handle holds it")
    const { store, trace, events, execution } = this.#ctx
    const cascade = this.#cascade(target, answer.id)
    const claimed = opts?.claim !== undefined
    // Without a durable claim the cascade's saves are separate writes, so a step may find its
    // answer applied by an attempt that died before the runtime was saved. Under a claim the
    // cascade is committed in one store call (durable's resumeRuntime): there is no such window.
    const recovering = !claimed
    for (const [i, handle] of cascade.entries()) {
      const pending = haltedOn(handle.shown(handle.pending as Request), cascade[i - 1])
      // Only the last save of the cascade consumes the claim; every step runs under it.
      const claim = i === cascade.length - 1 ? opts?.claim : undefined
      const id = this.#ctx.conversationId(handle)
      this.#unpark(handle)
      applyTransition(handle, "unpark", trace, events)
      applyTransition(handle, "start", trace, events)
      await execution.run(handle, async (client, toolkit, signal, onEvent) => {
        const recorded = recovering
          ? await appliedBefore(store, id, answer.id, this.#ctx.transcriptOf(handle))
          : undefined
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
          resume: claimed ? (claim === undefined ? {} : { claim }) : undefined,
        })
      })
    }
    const top = cascade[cascade.length - 1] as HandleRecord
    return top.settledResult() ?? top.shownResult(top.lastResult as TaskResult)
  }

  /** Every open request, once, with its deepest and topmost holders; ordered by deepest holder id. */
  parked(): ParkedRequest[] {
    const out: ParkedRequest[] = []
    for (const id of this.#byRequest.keys()) {
      const deepest = this.#deepest(id) as HandleRecord
      const cascade = this.#cascade(deepest, id)
      const top = cascade[cascade.length - 1] as HandleRecord
      const request = deepest.shown(deepest.pending as Request)
      out.push({
        request,
        handle: deepest.handle,
        path: [...((request.data?.path as string[] | undefined) ?? [])],
        conversationId: this.#ctx.conversationId(deepest),
        top: top.handle,
        topConversationId: this.#ctx.conversationId(top),
      })
    }
    return out.sort((a, b) => (a.handle.id < b.handle.id ? -1 : a.handle.id > b.handle.id ? 1 : 0))
  }

  /**
   * Reading old rows: a request whose topmost holder's conversation no longer waits on it
   * was answered by a process that saved every handle of the cascade (the top saves last) but
   * died before the runtime itself was saved — possible where a resume writes the conversations
   * and the snapshot in separate calls: a plain store, or a tree stored by a durable version
   * before round 5 (a durable resume now commits them in one store call). Each such cascade is resumed from the store —
   * every step is recovered (see `appliedBefore`), nothing runs — so the tree matches the
   * store again. `answerFor` gives the decision that was applied, when the caller knows it
   * (a durable store records it); it is what a step the store cannot recover would continue
   * with. Returns the request ids it recovered.
   */
  async reconcile(answerFor?: (requestId: string) => Promise<Answer | undefined>): Promise<string[]> {
    const { store } = this.#ctx
    if (store.getPending === undefined) return []
    const recovered: string[] = []
    for (const entry of this.parked()) {
      if ((await store.getPending(entry.topConversationId))?.id === entry.request.id) continue
      // A store that lacks the conversation is no evidence the answer was applied.
      if ((await store.get(entry.topConversationId)) === undefined) continue
      // Every step of the cascade saved before the top did, so each is taken from the store.
      const id = entry.request.id
      await this.resume((await answerFor?.(id)) ?? { id, ok: true })
      recovered.push(entry.request.id)
    }
    return recovered
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

  /** The deepest handle parked on request `id`. */
  #deepest(id: string): HandleRecord | undefined {
    let target: HandleRecord | undefined
    for (const r of this.#holders(id)) if (!target || depth(r) > depth(target)) target = r
    return target
  }

  /** `target` and each ancestor parked on the same request, deepest first: the order of a resume. */
  #cascade(target: HandleRecord, id: string): HandleRecord[] {
    const cascade: HandleRecord[] = []
    for (let r: HandleRecord | undefined = target; r && r !== this.#ctx.root; r = r.parent) {
      if (r.state !== "suspended" || r.inline || r.pending?.id !== id) break
      cascade.push(r)
    }
    return cascade
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

/** Levels below the root, counted on the tree (never parsed from an id). */
function depth(r: HandleRecord): number {
  let n = 0
  for (let p = r.parent; p; p = p.parent) n++
  return n
}
