import { runIdOfEntry } from "@toolnexus/core"
import type { Answer, Request } from "@toolnexus/core"
import { fitAnswerToRequest } from "./answer-body.js"
import { describeRequest } from "./describe-request.js"
import type { EventHub } from "./events.js"
import type { History, HistoryEntry } from "./history.js"
import { HttpError, classify } from "./http-error.js"
import type { InboxEntry, InboxStore, RunOutcome } from "./host-inbox.js"
import type { NotificationOutbox } from "@toolnexus/durable"
import type { Notification } from "./notifier.js"
import type { Principal } from "./security/access.js"
import type { RateLimiter } from "./security/rate-limit.js"

/** A run as the API reports it: finished, or waiting on a request. */
export interface RunView {
  /** The run: a conversation id, or a team run's runtime key. */
  id: string
  kind: RunOutcome["kind"]
  status: string
  /** The model's final text (or what it said before it halted). */
  text: string
  /** The request the run waits on when `status` is `"pending"`. */
  pending?: Request
  /** Which limit stopped the run when `status` is `"incomplete"`. */
  limit?: string
}

/** The view of what starting or answering did. */
export function toRunView(outcome: RunOutcome): RunView {
  const { result } = outcome
  const view: RunView = {
    id: outcome.kind === "runtime" ? outcome.key : outcome.id,
    kind: outcome.kind,
    status: result.status,
    text: result.text,
  }
  if (result.pending) view.pending = result.pending
  if (result.limit) view.limit = result.limit
  return view
}

/**
 * How an answer is taken, whichever way it arrives (page, API, webhook): rate limited per
 * caller, checked against what the request allows, delivered, recorded in the history with
 * the run's outcome, and announced to the open pages and the notification receiver.
 */
export function createAnswering(opts: {
  inbox: InboxStore
  history: History
  hub: EventHub
  limiter: RateLimiter
  notify?: (notification: Notification) => void
  /** Sends `request.pending` (retried, recorded) when a run parks. */
  outbox?: NotificationOutbox
  modelUrl?: string
  onError: (error: unknown) => void
}) {
  const { inbox, history, hub, notify, outbox } = opts

  async function record(entry: HistoryEntry): Promise<void> {
    await history.record(entry).catch(opts.onError)
    hub.notify("history")
  }

  /** Tells the open pages, and the notification receiver (through the outbox), that a run parked (again) or finished. */
  function announce(view: RunView): void {
    hub.notify("inbox")
    if (view.status !== "pending" || !view.pending || !outbox) return
    // The first attempt; a failed one (or this process dying first) is the outbox sweep's.
    void outbox.parked(view.pending.id).catch(opts.onError)
  }

  /**
   * Answers a request for `principal`.
   *
   * @throws HttpError 429 when the caller answers too often; 400 for edits or form values the request does not allow.
   * @throws what `deliverAnswer` throws (unknown, conflict, expired, model and store failures).
   */
  async function answer(reply: Answer, principal: Principal): Promise<RunView> {
    const limited = opts.limiter.take(`${principal.via}:${principal.name}`)
    if (!limited.ok) {
      throw new HttpError(429, "rate_limited", `too many answers; try again in ${limited.retryAfterS} s`, {
        "retry-after": String(limited.retryAfterS),
      })
    }
    const open = await inbox.findRequest(reply.id)
    if (!open) {
      // Unknown, or answered already: the store tells which, and nothing is recorded.
      return toRunView(await inbox.deliver(reply))
    }
    // Expiry and the one decision per request are the host's to judge, for every holder.
    const fitted = fitAnswerToRequest(reply, open.request)
    let view: RunView
    try {
      view = toRunView(await inbox.deliver(fitted))
    } catch (error) {
      const { status, code, message } = classify(error, opts.modelUrl)
      const runId = runIdOfEntry(open)
      if (code === "run_pending") {
        // Taken, and the run goes on past the wait (an engine replaying, say): the answer is
        // recorded and announced as such, not as a failure; the caller still hears the 504.
        await record(historyEntry(open, fitted, principal, runId, { status: "running" }))
        answered(reply.id, runId, principal, fitted, "running")
      } else if (status >= 500) {
        // The decision was taken and kept (the next delivery or a sweep completes the run): record it.
        await record(historyEntry(open, fitted, principal, runId, { status: "error", error: message }))
      }
      hub.notify("inbox")
      throw error
    }
    const outcome: HistoryEntry["outcome"] = { status: view.status, text: view.text }
    if (view.pending) outcome.nextRequestId = view.pending.id
    await record(historyEntry(open, fitted, principal, view.id, outcome))
    answered(reply.id, view.id, principal, fitted, view.status)
    announce(view)
    return view
  }

  /** Tells the notification receiver that a request was answered, and where its run stands. */
  function answered(
    requestId: string,
    runId: string,
    principal: Principal,
    fitted: Answer,
    outcome: string,
  ): void {
    notify?.({
      type: "request.answered",
      requestId,
      runId,
      answeredBy: principal.name,
      ok: fitted.ok,
      ...(fitted.reason !== undefined ? { reason: fitted.reason } : {}),
      outcome,
    })
  }

  return { answer, announce }
}

function historyEntry(
  open: InboxEntry,
  answer: Answer,
  principal: Principal,
  runId: string,
  outcome: HistoryEntry["outcome"],
): HistoryEntry {
  const described = describeRequest(open.request)
  const decision: HistoryEntry["decision"] = { ok: answer.ok }
  if (answer.reason !== undefined) decision.reason = answer.reason
  if (answer.data !== undefined) decision.data = answer.data
  const entry: HistoryEntry = {
    requestId: answer.id,
    runId,
    kind: open.request.kind,
    prompt: open.request.prompt,
    answeredBy: principal.name,
    via: principal.via,
    answeredAt: new Date().toISOString(),
    decision,
    outcome,
  }
  if (described.tool) entry.tool = described.tool
  if (described.args) entry.args = described.args
  if (open.path?.length) entry.path = open.path
  return entry
}
