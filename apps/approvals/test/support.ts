import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Client, createClient, type EndpointStyle } from "@toolnexus/core"
import type { FakeLLMServer, FakeReply, FakeRequestView } from "@toolnexus/core/testing"
import type { DurableStore } from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import type { Hono } from "hono"
import { createApprovalsApp } from "../src/app.js"
import { type ApprovalToolsOptions, createApprovalToolkit, type ToolEffect } from "../src/tools.js"

/**
 * The fake model's behaviour: with tool results, report them; asked to email, call
 * `send_email` with the prompt as subject (so a test controls what the page must escape);
 * asked to refund, call `refund_order`; anything else, answer in plain text.
 */
export function agentReply(req: FakeRequestView): FakeReply {
  if (req.toolResults.length > 0) {
    const lines = req.toolResults.map(({ content }) =>
      content.startsWith("declined:") ? `Not done, it was ${content}` : `Done: ${content}`,
    )
    return { text: lines.join("\n") }
  }
  const prompt = req.lastUserText
  const toolCalls: FakeReply["toolCalls"] = []
  if (/refund/i.test(prompt)) {
    const orderId = /order (\S+)/i.exec(prompt)?.[1] ?? "A-1"
    const amountUsd = Number(/\$(\d+)/.exec(prompt)?.[1] ?? 10)
    toolCalls.push({ name: "refund_order", arguments: { orderId, amountUsd } })
  }
  if (/email/i.test(prompt)) {
    toolCalls.push({ name: "send_email", arguments: { to: "jane@example.com", subject: prompt, body: "Hi" } })
  }
  return toolCalls.length > 0 ? { text: "Asking first.", toolCalls } : { text: `You said: ${prompt}` }
}

/** A client of the fake LLM server in the given endpoint style. */
export function fakeClient(fake: FakeLLMServer, style: EndpointStyle, store: DurableStore): Client {
  const baseUrl = style === "openai" ? `${fake.url}/v1` : fake.url
  return createClient({ baseUrl, style, model: "fake-model", apiKey: "test-key", store, retryBaseMs: 1 })
}

/** One approvals app over its own store, with the effects its tools performed. */
export interface Instance {
  app: Hono
  store: DurableStore
  client: Client
  effects: ToolEffect[]
  /** The unexpected errors the app reported (instead of logging them). */
  errors: unknown[]
}

/** Builds an app over `store` and the fake LLM server; the effects land in `effects`. */
export async function instance(
  fake: FakeLLMServer,
  store: DurableStore,
  opts: { style?: EndpointStyle; effects?: ToolEffect[]; tools?: ApprovalToolsOptions } = {},
): Promise<Instance> {
  const effects = opts.effects ?? []
  const errors: unknown[] = []
  const client = fakeClient(fake, opts.style ?? "openai", store)
  const toolkit = await createApprovalToolkit({ ...opts.tools, onEffect: (e) => effects.push(e) })
  const app = createApprovalsApp({ store, client, toolkit, onError: (e) => errors.push(e) })
  return { app, store, client, effects, errors }
}

/** A directory of SQLite files, one fresh database per call of `store()`. */
export function sqliteFiles() {
  const dir = mkdtempSync(join(tmpdir(), "tnx-approvals-"))
  const opened: DurableStore[] = []
  let n = 0
  return {
    dir,
    store(): DurableStore {
      const store = new SqliteStore({ path: join(dir, `approvals-${++n}.db`) })
      opened.push(store)
      return store
    },
    async cleanup(): Promise<void> {
      await Promise.all(opened.map((s) => s.close().catch(() => {})))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** `app.request` with a JSON body. */
export function postJson(app: Hono, path: string, body: unknown): Promise<Response> {
  const init = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
  return Promise.resolve(app.request(path, init))
}

/** Starts a run through the API and returns its JSON view. */
export async function startRun(app: Hono, prompt: string): Promise<any> {
  const res = await postJson(app, "/runs", { prompt })
  if (res.status !== 201) throw new Error(`POST /runs answered ${res.status}: ${await res.text()}`)
  return json(res)
}

/** A response's JSON body, loosely typed for assertions. */
export function json(res: Response): Promise<any> {
  return res.json() as Promise<any>
}

/** `GET path` and its JSON body. */
export async function getJson(app: Hono, path: string): Promise<any> {
  return json(await app.request(path))
}
