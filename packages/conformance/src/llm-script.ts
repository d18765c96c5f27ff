import type { FakeLLMServer, FakeReply, FakeRequestView, FakeRule } from "@toolnexus/core/testing"
import type { AgentSpec, LlmRule, ReplySpec, RuleMatch } from "./fixture.js"
import { render } from "./values.js"

/** What the scripted model observed beyond the server's own request log. */
export interface LlmObservations {
  /** Requests no rule matched; each was answered with an HTTP 400 so that nothing retries it. */
  unmatched: FakeRequestView[]
  /** The most requests in flight at once, sampled as each request arrived. */
  peakInFlight: number
}

/**
 * Turns a fixture's `llm` rules into fake-server rules: a first rule that only observes, the
 * fixture's rules in order, and a last rule that answers any unscripted request with a loud 400.
 */
export function scriptRules(
  server: FakeLLMServer,
  rules: readonly LlmRule[],
  registry: readonly AgentSpec[],
  seen: LlmObservations,
): FakeRule[] {
  const souls = new Map(registry.map((def) => [def.name, def.soul]))
  const observe: FakeRule = {
    match: () => {
      seen.peakInFlight = Math.max(seen.peakInFlight, server.inFlight)
      return false
    },
    reply: { text: "never used" },
  }
  const scripted = rules.map(
    (rule): FakeRule => ({
      match: (req) => matches(rule.when ?? {}, req, souls),
      reply: (req) => toFakeReply(rule.reply, req),
      ...(rule.times === undefined ? {} : { times: rule.times }),
    }),
  )
  const unscripted: FakeRule = {
    match: () => true,
    reply: (req) => {
      seen.unmatched.push(req)
      // 400 is never retried, so a missing rule fails at once instead of after backoff.
      return { status: 400, text: `conformance: no rule matched LLM request #${req.index}` }
    },
  }
  return [observe, ...scripted, unscripted]
}

function matches(when: RuleMatch, req: FakeRequestView, souls: Map<string, string | undefined>): boolean {
  if (when.agent !== undefined && req.system !== souls.get(when.agent)) return false
  if (when.system !== undefined && !req.system.includes(when.system)) return false
  if (when.lastUserText !== undefined && !req.lastUserText.includes(when.lastUserText)) return false
  if (when.toolResults !== undefined && req.toolResults.length > 0 !== when.toolResults) return false
  if (
    when.toolResult !== undefined &&
    !req.toolResults.some((r) => r.content.includes(when.toolResult ?? ""))
  )
    return false
  return true
}

function toFakeReply(spec: ReplySpec, req: FakeRequestView): FakeReply {
  const reply: FakeReply = {}
  if (spec.text !== undefined) reply.text = render(spec.text, replyVariables(req))
  if (spec.toolCalls !== undefined) {
    reply.toolCalls = spec.toolCalls.map((call) => ({
      ...(call.id === undefined ? {} : { id: call.id }),
      name: call.name,
      arguments: call.args ?? {},
    }))
  }
  if (spec.usage !== undefined) {
    reply.usage = {
      ...(spec.usage.prompt === undefined ? {} : { promptTokens: spec.usage.prompt }),
      ...(spec.usage.completion === undefined ? {} : { completionTokens: spec.usage.completion }),
    }
  }
  if (spec.delayMs !== undefined) reply.delayMs = spec.delayMs
  if (spec.hang) reply.hang = true
  if (spec.status !== undefined) reply.status = spec.status
  if (spec.refusal !== undefined) reply.refusal = spec.refusal
  if (spec.cutOff !== undefined) reply.cutOff = spec.cutOff
  return reply
}

function replyVariables(req: FakeRequestView): Record<string, unknown> {
  const vars: Record<string, unknown> = {
    lastUserText: req.lastUserText,
    system: req.system,
    toolResults: req.toolResults.map((r) => r.content).join(" | "),
    toolResultIds: req.toolResults.map((r) => r.id).join(","),
  }
  req.toolResults.forEach((r, i) => {
    vars[`toolResults.${i}`] = r.content
  })
  return vars
}

/** A style-neutral view of a recorded request, for `expect.requests`. */
export function requestView(req: FakeRequestView): Record<string, unknown> {
  const body = req.body as {
    messages?: { role?: string }[]
    input?: { role?: string }[]
    tools?: Record<string, any>[]
  }
  const toolDescriptions: Record<string, string> = {}
  for (const tool of body.tools ?? []) {
    const fn = req.style === "openai" ? tool.function : tool
    if (fn && typeof fn.name === "string") toolDescriptions[fn.name] = String(fn.description ?? "")
  }
  return {
    system: req.system,
    lastUserText: req.lastUserText,
    toolResults: req.toolResults.map((r) => r.content),
    toolResultIds: req.toolResults.map((r) => r.id),
    toolNames: req.toolNames,
    toolDescriptions,
    // System messages are left out so that both styles count the same conversation alike.
    messageCount: (body.messages ?? body.input ?? []).filter((m) => m.role !== "system").length,
    // The transcript as sent. OpenAI chat sends the system prompt as the first message; the
    // other styles send it apart (`system`, `instructions`).
    messages: (body.messages ?? body.input ?? []).filter(
      (m, i) => !(req.style === "openai" && i === 0 && m.role === "system"),
    ),
    model: req.model,
  }
}
