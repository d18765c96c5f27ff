import type { HostRelayOptions } from "@toolnexus/core"
import type { ChatHandlerOptions } from "../internal/chat-options.js"
import { type AcceptedRun, ConversationGate } from "../internal/conversation-gate.js"
import { logRefusal, logRunFailure } from "../internal/door-log.js"
import { Refusal, badRequest } from "../internal/http-error.js"
import { LiveRun, SSE_HEADERS } from "../internal/live-run.js"
import { type HandlerInput, type Reply, fetchHandler } from "../internal/reply.js"
import { startRun } from "../internal/start-run.js"
import type { AgUiEvent } from "./ag-ui-event.js"
import { AgUiWriter } from "./ag-ui-writer.js"
import {
  type AgUiInput,
  knownCallsOf,
  promptOfUser,
  readRunAgentInput,
  resumeAnswerOf,
  toolMessagesAnswerOf,
} from "./run-agent-input.js"

/** What an input asks for, once read. */
interface Ask {
  accepted: AcceptedRun
  skipResults?: Set<string>
}

/**
 * A fetch-style handler serving AG-UI 1.0 (`@ag-ui/client`'s `HttpAgent`, CopilotKit): POST a
 * `RunAgentInput` (`threadId` = the chat id), get the run as SSE events. A suspension ends the
 * run with an `interrupt` outcome (`input.resume[]` answers it), a relay request with
 * `pendingToolCallIds` (the frontend tool's result messages answer it). The transcript is the
 * one the host keeps (run id = the thread's conversation): posted messages give only the newest
 * user message and tool results. Bad input a client can send inside a valid `RunAgentInput` is
 * one `RUN_ERROR {code, message}`. Over `{ host, agent }` the hosted agent's toolkit is the
 * run's; the shorthand (`client`, `toolkit`) also offers the posted frontend tools as relay tools.
 *
 * @throws ConfigError for options that are neither `{ host, agent }` nor the shorthand, or a
 *   shorthand `store` that is not `client.conversationStore()`.
 * @example
 * const handler = createAgUiHandler({ host, agent: "support" })
 * export const POST = handler // app/api/agent/route.ts
 */
export function createAgUiHandler(opts: ChatHandlerOptions): (req: Request) => Promise<Response> {
  const gate = new ConversationGate(opts)
  /** A refusal before the body was read is a JSON reply; inside a valid input, a `RUN_ERROR`. */
  const refuse = (refusal: Refusal, conversation?: string): Reply => {
    logRefusal(opts.logger, "AG-UI", refusal, conversation)
    return conversation === undefined ? refusal.toReply() : runError(refusal)
  }

  async function post(req: HandlerInput): Promise<Reply> {
    const opened = await gate.openPost(req, readRunAgentInput, (input) => input.threadId)
    if (opened instanceof Refusal) return refuse(opened)
    if (opened instanceof Response) return opened
    const { post: input, conversation } = opened
    const ask = await read(input, conversation)
    if (ask instanceof Refusal) return refuse(ask, conversation)

    const run = new LiveRun<AgUiEvent>()
    const writer = new AgUiWriter((ev) => run.push(ev), {
      threadId: input.threadId,
      runId: input.runId,
      onError: opts.onError,
      knownCalls: knownCallsOf(input),
      ...(ask.skipResults ? { skipResults: ask.skipResults } : {}),
    })
    writer.start()
    const started = await startRun(ask.accepted, (ev) => writer.event(ev))
    if ("refusal" in started) return refuse(started.refusal, conversation)
    void started.settled.then((settled) => {
      if (settled.ok) writer.end(settled.result)
      else {
        logRunFailure(opts.logger, "AG-UI", settled.error, conversation)
        writer.fail(settled.error)
      }
      run.end()
    })
    return { status: 200, headers: SSE_HEADERS, live: run }
  }

  /** Reads an input in the contract's order: `resume[]`, tool messages for the relay request, a user message. */
  async function read(input: AgUiInput, conversation: string): Promise<Ask | Refusal> {
    // Frontend tools reach a run through the shorthand's own agent only (see ChatHandlerOptions).
    const relay = "client" in opts ? relayOf(input.tools) : undefined
    // The host's open requests are scanned only when the input needs the thread's own: to pick
    // among several resume entries, or to read tool messages. A new turn never scans them.
    const tooled = input.messages.some((m) => m.role === "tool")
    const pending =
      (input.resume?.length ?? 0) > 1 || (input.resume === undefined && tooled)
        ? await gate.pendingOf(conversation)
        : undefined
    const resumed = resumeAnswerOf(input, pending?.id)
    if (resumed) return accepted(await gate.answer(conversation, resumed, relay))
    const toolResults = toolMessagesAnswerOf(input, pending)
    if (toolResults) {
      const supplied = new Set(((toolResults.data?.results ?? []) as { id: string }[]).map((r) => r.id))
      const run = await gate.answer(conversation, toolResults, relay)
      return run instanceof Refusal ? run : { accepted: run, skipResults: supplied }
    }
    const last = input.messages.at(-1)
    if (last?.role !== "user")
      return badRequest(
        "the input asks nothing: no resume entry, no result for an open tool call, no new user message",
      )
    const prompt = promptOfUser(last)
    if (prompt instanceof Refusal) return prompt
    // One message: a new thread's first run, started first (a hint only; see `ConversationGate.turn`).
    return { accepted: gate.turn(conversation, prompt, relay, input.messages.length === 1) }
  }

  return fetchHandler(async (req) => {
    if (req.method === "POST") return post(req)
    const refusal = new Refusal(
      405,
      "TNX_BAD_REQUEST",
      `${req.method} is not served here (POST a RunAgentInput)`,
    )
    logRefusal(opts.logger, "AG-UI", refusal)
    return refusal.toReply({ allow: "POST" })
  })
}

function accepted(run: AcceptedRun | Refusal): Ask | Refusal {
  return run instanceof Refusal ? run : { accepted: run }
}

/**
 * The posted frontend tools as the run's relay tools (`HostStartOptions.relay`; the host keeps
 * a toolkit tool of the same name); names a toolkit cannot hold are left out.
 */
function relayOf(tools: AgUiInput["tools"]): HostRelayOptions | undefined {
  const relays = tools
    .filter((t) => /^[a-zA-Z0-9_-]{1,64}$/.test(t.name))
    .map((t) => ({
      name: t.name,
      description: t.description,
      parameters:
        typeof t.parameters === "object" && t.parameters !== null
          ? (t.parameters as Record<string, unknown>)
          : { type: "object", properties: {} },
    }))
  return relays.length === 0 ? undefined : { tools: relays }
}

/** A refusal inside a valid input: the stream of one `RUN_ERROR {code, message}`. */
function runError(refusal: Refusal): Reply {
  const extra = Object.keys(refusal.extra).length > 0 ? { metadata: { toolnexus: refusal.extra } } : {}
  const event = { type: "RUN_ERROR", code: refusal.code, message: refusal.message, ...extra }
  return { status: 200, headers: SSE_HEADERS, body: `data: ${JSON.stringify(event)}\n\n` }
}
