import type { Answer, Request } from "@toolnexus/core"
import type { HandleRecord } from "./handle-record.js"
import { applyTransition } from "./handle-state.js"
import type { EventHub } from "./runtime-events.js"
import { withPath } from "./request-path.js"
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
