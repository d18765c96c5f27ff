import { serve } from "@hono/node-server"
import { type EndpointStyle, createClient } from "@toolnexus/core"
import { type FakeLLMServer, createFakeLLMServer } from "@toolnexus/core/testing"
import { type DurableStore, openStore } from "@toolnexus/durable"
import type OpenAI from "openai"
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest"
import { type RelayProxyOptions, createRelayProxy } from "../src/app.js"
import { forwardCallerParams } from "../src/caller-params.js"

export const STYLES = ["openai", "anthropic", "openai-responses"] as const satisfies EndpointStyle[]
export const API_KEY = "sk-upstream-very-secret-1234"

/** One fake upstream per test file, reset before each test; a fresh in-memory store per test. */
export function useHarness(): { readonly server: FakeLLMServer; readonly store: DurableStore } {
  const holder = {} as { server: FakeLLMServer; store: DurableStore }
  beforeAll(async () => {
    holder.server = await createFakeLLMServer()
  })
  beforeEach(async () => {
    holder.server.reset()
    holder.store = await openStore("sqlite::memory:")
  })
  afterEach(() => holder.store.close())
  afterAll(() => holder.server.close())
  return holder
}

/** A proxy in front of the fake upstream in the given style. */
export function proxyFor(
  style: EndpointStyle,
  server: FakeLLMServer,
  store: DurableStore,
  options: Partial<RelayProxyOptions> = {},
) {
  const client = createClient({
    baseUrl: style === "anthropic" ? server.url : `${server.url}/v1`,
    style,
    model: "upstream-model",
    apiKey: API_KEY,
    // As in main.ts: one upstream attempt per caller request; the caller's SDK retries.
    retries: 0,
    store,
    bodyTransform: forwardCallerParams(style),
  })
  return createRelayProxy({ client, store, style, model: "upstream-model", secrets: [API_KEY], ...options })
}

const [clientModule, versionModule] =
  Number(process.versions.node.split(".")[0]) >= 22
    ? await Promise.all([import("openai-v7"), import("openai-v7/version")])
    : await Promise.all([import("openai"), import("openai/version")])

/**
 * The official `openai` client the tests drive, unchanged: its current major (7.x, which needs
 * Node 22) where this Node runs it, else 6.x. The types are 6.x's; both majors take them.
 */
export const OpenAIClient = clientModule.default as unknown as typeof OpenAI

/** The version of {@link OpenAIClient}'s package, as that package reports it. */
export const OPENAI_VERSION: string = versionModule.VERSION

/** Serves `app` on a free 127.0.0.1 port; `baseURL` is what an OpenAI client is given. */
export function listen(app: { fetch: (req: Request) => Response | Promise<Response> }) {
  return new Promise<{ baseURL: string; close: () => Promise<void> }>((resolve) => {
    const http = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve({
        baseURL: `http://127.0.0.1:${info.port}/v1`,
        close: () =>
          new Promise((done) => {
            http.close(() => done())
            ;(http as { closeAllConnections?: () => void }).closeAllConnections?.()
          }),
      }),
    )
  })
}

/** POSTs a chat-completions body (an object, or raw text) through `app.request`. */
export async function chat(
  app: { request: (path: string, init: RequestInit) => Response | Promise<Response> },
  body: unknown,
): Promise<{ status: number; headers: Headers; json: any }> {
  const res = await app.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, json: (await res.json()) as any }
}

/** An OpenAI function-tool declaration. */
export function fnTool(name: string, properties: Record<string, unknown> = {}) {
  return {
    type: "function",
    function: {
      name,
      description: `${name} on the caller's side`,
      parameters: { type: "object", properties },
    },
  }
}
