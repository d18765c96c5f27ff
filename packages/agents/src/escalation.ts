import type { Answer, Request } from "@toolnexus/core"
import type { HandleRecord } from "./handle-record.js"
import { applyTransition } from "./handle-state.js"
import type { EventHub } from "./runtime-events.js"
import type { Trace } from "./trace.js"

/**
 * @internal How a handle's suspensions are answered inline: by the nearest `waitFor` on the
 * chain self → root. While it decides, the handle is `suspended` (inline: it keeps its slot)
 * and its request carries `data.path`. `undefined` when no def on the chain has a `waitFor`:
 * the run then halts and the handle parks. `top` answers when no def does (an engine's wait).
 */
export function escalationFor(
  r: HandleRecord,
  trace: Trace,
  events: EventHub,
  top?: (req: Request) => Promise<Answer>,
): ((req: Request) => Promise<Answer>) | undefined {
  let waitFor: ((req: Request) => Answer | Promise<Answer>) | undefined
  for (const x of r.chain()) {
    waitFor = x.def.waitFor
    if (waitFor) break
  }
  // Under a durable executor the engine's wait is the `waitFor` atop every chain.
  waitFor ??= top
  if (!waitFor) return undefined
  const answer = waitFor
  return async (req) => {
    r.inline = true
    r.pending = withPath(req, r.id)
    applyTransition(r, "escalate", trace, events)
    try {
      return await answer(r.pending)
    } finally {
      r.inline = false
      r.pending = undefined
      if (r.state === "suspended") applyTransition(r, "answerInline", trace, events)
    }
  }
}

const ROOT_SEGMENT = "root"

/** @internal The deepest suspended handle's id segments ride the request up the tree. */
export function withPath(req: Request, id: string): Request {
  if (Array.isArray(req.data?.path)) return req
  // Copied, then `path` added: on Node 20's V8 a spread-then-add literal gets a hidden class of
  // its own, about 190 B more per parked handle.
  const data: Record<string, unknown> = Object.assign({}, req.data)
  const path = id.split("/")
  // Every id starts at the root: its segment is this one shared string, not a fresh copy.
  if (path[0] === ROOT_SEGMENT) path[0] = ROOT_SEGMENT
  data.path = path
  return { ...req, data }
}
