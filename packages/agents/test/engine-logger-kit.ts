import { type Logger, type RunHost, createClient, createToolkit, defineTool, pending } from "@toolnexus/core"
import type { FakeLLMServer } from "@toolnexus/core/testing"
import { expect, vi } from "vitest"
import type { EngineAgentOptions } from "../src/index.js"

// The engines' logger tests (packages/restate and packages/dbos, logger.int.test.ts): one
// capturing logger and the two agents they run, so both engines are checked on the same runs.

/** One line a captured logger received. */
export type Line = { level: string; message: string; data?: Record<string, unknown> }

/** A logger that appends every call to `lines`. */
export const capture = (lines: Line[]): Logger => ({
  debug: (message, data) => lines.push({ level: "debug", message, data }),
  info: (message, data) => lines.push({ level: "info", message, data }),
  warn: (message, data) => lines.push({ level: "warn", message, data }),
  error: (message, data) => lines.push({ level: "error", message, data }),
})

/**
 * Scripts `llm` and returns the options of two agents for an engine's `…Agent()`: `approve`
 * asks one approval and says "approved" once answered; `fails` gets an HTTP 400 from the model.
 */
export async function loggerAgents(llm: FakeLLMServer): Promise<EngineAgentOptions[]> {
  llm.addRule({
    match: (req) => req.system === "approve" && req.toolResults.length === 0,
    reply: { toolCalls: [{ id: "a1", name: "approve", arguments: {} }] },
  })
  llm.addRule({ match: (req) => req.system === "approve", reply: { text: "approved" } })
  llm.addRule({ match: (req) => req.system === "fails", reply: { status: 400, text: "bad request" } })
  const approve = defineTool({
    name: "approve",
    description: "needs an approval",
    inputSchema: { type: "object", properties: {} },
    run: (_args, ctx) => (ctx.answer?.ok ? "done" : pending({ kind: "approval", prompt: "Go?" })),
  })
  const client = (soul: string) =>
    createClient({
      baseUrl: `${llm.url}/v1`,
      style: "openai",
      model: "m",
      apiKey: "k",
      systemPrompt: soul,
      retryBaseMs: 1,
    })
  return [
    { name: "approve", client: client("approve"), toolkit: await createToolkit({ extraTools: [approve] }) },
    { name: "fails", client: client("fails") },
  ]
}

/**
 * Run `log-1` of `approve` on `engine`: its request answered twice (the second refused with
 * TNX_ANSWER_CONFLICT), the run ended "approved". Resolves with the request's id.
 */
export async function answeredTwice(engine: RunHost): Promise<string> {
  await engine.start("approve", "log-1", "go")
  const requestId = await vi.waitFor(
    async () => {
      const id = (await engine.listPending())[0]?.request.id
      if (id === undefined) throw new Error("the request is not open yet")
      return id
    },
    { timeout: 30_000, interval: 100 },
  )
  await engine.deliverAnswer({ id: requestId, ok: true })
  await expect(engine.deliverAnswer({ id: requestId, ok: true })).rejects.toMatchObject({
    code: "TNX_ANSWER_CONFLICT",
  })
  expect(await engine.result("log-1", { timeoutMs: 20_000 })).toMatchObject({ text: "approved" })
  return requestId
}
