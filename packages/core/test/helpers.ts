import { afterAll, beforeAll, beforeEach } from "vitest"
import { createClient } from "../src/client/create-client.js"
import type { ClientOptions } from "../src/client/create-client.js"
import { pending } from "../src/suspension/pending.js"
import { type FakeLLMServer, createFakeLLMServer } from "../src/testing/index.js"
import { defineTool } from "../src/tools/define-tool.js"

export const STYLES = ["openai", "anthropic", "openai-responses"] as const
export type Style = (typeof STYLES)[number]

/** One fake server per test file, reset before each test. */
export function useFakeServer(): { readonly server: FakeLLMServer } {
  const holder = {} as { server: FakeLLMServer }
  beforeAll(async () => {
    holder.server = await createFakeLLMServer()
  })
  beforeEach(() => holder.server.reset())
  afterAll(() => holder.server.close())
  return holder
}

/** A client of the fake server in the given style. */
export function clientFor(style: Style, server: FakeLLMServer, opts: Partial<ClientOptions> = {}) {
  return createClient({
    baseUrl: style === "anthropic" ? server.url : `${server.url}/v1`,
    style,
    model: "test-model",
    apiKey: "sk-test-secret",
    retryBaseMs: 1,
    ...opts,
  })
}

/** A tool that suspends for approval until it is retried with an `ok` answer. */
export const approve = defineTool({
  name: "approve",
  description: "Needs a human",
  inputSchema: { type: "object", properties: { what: { type: "string" } } },
  run: ({ what }, toolCtx) =>
    toolCtx.answer?.ok ? `approved ${what}` : pending({ kind: "approval", prompt: `Approve ${what}?` }),
})

/** A plain tool whose output names what it looked up. */
export const lookup = defineTool({
  name: "lookup",
  description: "Looks a thing up",
  inputSchema: { type: "object", properties: { q: { type: "string" } } },
  run: ({ q }) => `found secret ${q}`,
})
