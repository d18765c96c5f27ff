import { type Server, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type { Request } from "@toolnexus/core"
import { afterEach, describe, expect, it } from "vitest"
import { connectRestate } from "../src/index.js"

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve))
})

const PARKED: Request = { id: "req-1", kind: "approval", prompt: "Refund $40?" }
const AGAIN: Request = { id: "req-2", kind: "approval", prompt: "And the fee?" }

/**
 * An ingress answering the handlers a connection calls, for one run `r1` whose worker is always
 * quicker than the connection: whatever the connection asks first, the turn has already parked
 * (`log` is its event log, `waitingOn` its open request).
 */
async function ingress(state: {
  log: unknown[]
  waitingOn: Request
  start: number
  decided: Set<string>
  /** `find` answers 500 (a read only the position for `onEvent` needs). */
  findFails?: boolean
}) {
  const server = createServer((req, res) => {
    let body = ""
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => {
      const [service, key, handler] = (req.url ?? "").split("/").slice(1).map(decodeURIComponent)
      const input = body === "" ? null : JSON.parse(body)
      const reply = (value: unknown) => res.end(JSON.stringify(value))
      if (service === "toolnexus_runs" && handler === "start") return reply({ started: true })
      if (service === "toolnexus_runs" && handler === "current")
        return reply({ v: 1, agent: "refunds", turn: 1, state: "running", waitingOn: state.waitingOn })
      if (service === "toolnexus_requests" && handler === "decision")
        return reply(state.decided.has(key as string) ? { ok: true } : null)
      if (service === "toolnexus_requests" && handler === "find" && state.findFails) {
        res.statusCode = 500
        return res.end("find is down")
      }
      if (service === "toolnexus_requests" && handler === "find")
        return reply({ request: state.waitingOn, conversationId: "r1", since: "2026-12-07T00:00:00.000Z" })
      if (service === "toolnexus_requests" && handler === "decide") {
        // The answer resumes the turn, which parks again on the next request before anyone looks.
        state.decided.add(key as string)
        state.log.push({ type: "text", delta: "refunded" }, { type: "pending", request: AGAIN })
        state.waitingOn = AGAIN
        state.start = state.log.length
        return reply({ runId: "r1", request: PARKED, decision: { ok: true } })
      }
      if (service === "toolnexus_events" && handler === "read") {
        const after = Math.min(Number(input?.after) || 0, state.log.length)
        return reply({ events: state.log.slice(after), next: state.log.length })
      }
      if (service === "toolnexus_events" && handler === "start") return reply(state.start)
      if (service === "toolnexus_events" && handler === "end") return reply(state.log.length)
      res.statusCode = 404
      res.end()
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Resolves with the first `pending` event `onEvent` hears. */
function heard(): { onEvent(ev: unknown): void; pending: Promise<Request> } {
  let hear!: (request: Request) => void
  const pending = new Promise<Request>((resolve) => {
    hear = resolve
  })
  return {
    pending,
    onEvent(ev) {
      const event = ev as { type?: string; request?: Request }
      if (event.type === "pending" && event.request) hear(event.request)
    },
  }
}

// An inbox waits on these events to answer "the run now waits on …" (apps/approvals): a run that
// parked before the connection's first look went unheard, and the inbox's POST timed out (504).
describe("connectRestate: onEvent hears a turn that parked before the first look", () => {
  it("start: the new turn's events are read from its log's start", async () => {
    const state = {
      log: [
        { type: "text", delta: "checking" },
        { type: "pending", request: PARKED },
      ],
      waitingOn: PARKED,
      start: 2,
      decided: new Set<string>(),
    }
    const engine = connectRestate({ ingress: await ingress(state), pollMs: 5 })
    const watch = heard()
    await engine.start("refunds", "r1", "refund A-77", { onEvent: watch.onEvent })
    expect(await watch.pending).toEqual(PARKED)
    await engine.close()
  })

  it("deliverAnswer: the resumed stretch is read from where it started, though the run parked again", async () => {
    const state = {
      log: [{ type: "pending", request: PARKED }],
      waitingOn: PARKED,
      start: 1,
      decided: new Set<string>(),
    }
    const engine = connectRestate({ ingress: await ingress(state), pollMs: 5 })
    const watch = heard()
    const events: unknown[] = []
    await engine.deliverAnswer(
      { id: PARKED.id, ok: true },
      {
        onEvent: (ev) => {
          events.push(ev)
          watch.onEvent(ev)
        },
      },
    )
    expect(await watch.pending).toEqual(AGAIN)
    // Only the resumed stretch: not the answered park's own event again.
    expect(events).toEqual([
      { type: "text", delta: "refunded" },
      { type: "pending", request: AGAIN },
    ])
    await engine.close()
  })

  it("deliverAnswer with onEvent: a failed read of the position for onEvent does not fail the answer", async () => {
    const state = {
      log: [{ type: "pending", request: PARKED }],
      waitingOn: PARKED,
      start: 1,
      decided: new Set<string>(),
      findFails: true,
    }
    const engine = connectRestate({ ingress: await ingress(state), pollMs: 5 })
    const watch = heard()
    await expect(
      engine.deliverAnswer({ id: PARKED.id, ok: true }, { onEvent: watch.onEvent }),
    ).resolves.toMatchObject({ runId: "r1", decision: { ok: true } })
    expect(state.decided.has(PARKED.id)).toBe(true)
    await engine.close()
  })
})
