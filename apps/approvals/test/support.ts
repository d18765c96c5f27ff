import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type Client,
  createClient,
  createToolkit,
  defineTool,
  type EndpointStyle,
  pending,
  type Tool,
  type Toolkit,
} from "@toolnexus/core"
import {
  createFakeLLMServer,
  type FakeLLMServer,
  type FakeReply,
  type FakeRequestView,
} from "@toolnexus/core/testing"
import type { DurableStore } from "@toolnexus/durable"
import { SqliteStore } from "@toolnexus/durable/sqlite"
import type { Hono } from "hono"
import { afterAll, beforeAll } from "vitest"
import { type ApprovalsAppOptions, createApprovalsApp } from "../src/app.js"
import type { AppEnv } from "../src/security/access.js"
import { SIGNATURE_HEADER, signBody } from "../src/security/webhook-signature.js"
import type { TeamOptions } from "../src/host-inbox.js"
import { createTeam } from "../src/team.js"
import {
  type ApprovalToolsOptions,
  createApprovalToolkit,
  createApprovalTools,
  type ToolEffect,
} from "../src/tools.js"

/** A clock a minute behind: requests asked on it with a short `expiresInMs` have already expired. */
export const aMinuteAgo = () => Date.now() - 60_000

/** The sign-in token of the test user "alice". */
export const ALICE_TOKEN = "alice-token-0123456789abcdef"
/** The sign-in token of the test user "bob". */
export const BOB_TOKEN = "bob-token-0123456789abcdef"
/** The API bearer token of the test client "ci". */
export const API_TOKEN = "ci-api-token-0123456789abcdef"
/** The webhook signing secret of test instances. */
export const WEBHOOK_SECRET = "whsec-test-0123456789abcdef"

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
  // A team's lead hands the work to the payments agent.
  if (req.toolNames.includes("task")) {
    return { text: "Delegating.", toolCalls: [{ name: "task", arguments: { agent: "payments", prompt } }] }
  }
  if (/refund/i.test(prompt)) {
    const orderId = /order (\S+)/i.exec(prompt)?.[1] ?? "A-1"
    const amountUsd = Number(/\$(\d+)/.exec(prompt)?.[1] ?? 10)
    toolCalls.push({ name: "refund_order", arguments: { orderId, amountUsd } })
  }
  if (/email/i.test(prompt)) {
    // A letter's body has line breaks, which the page must show as such.
    const body = /letter/i.test(prompt) ? "Dear Jane,\n\nYour refund is on its way.\n\nSupport" : "Hi"
    toolCalls.push({ name: "send_email", arguments: { to: "jane@example.com", subject: prompt, body } })
  }
  if (/ask the customer/i.test(prompt)) toolCalls.push({ name: "ask_customer", arguments: { topic: prompt } })
  if (/shipping form/i.test(prompt))
    toolCalls.push({ name: "crm__update_address", arguments: { customer: "C-9" } })
  if (/xss probe/i.test(prompt)) toolCalls.push({ name: "xss_probe", arguments: XSS_ARGS })
  return toolCalls.length > 0 ? { text: "Asking first.", toolCalls } : { text: `You said: ${prompt}` }
}

/** A client of the fake LLM server in the given endpoint style. */
export function fakeClient(fake: FakeLLMServer, style: EndpointStyle, store: DurableStore): Client {
  const baseUrl = style === "openai" ? `${fake.url}/v1` : fake.url
  return createClient({ baseUrl, style, model: "fake-model", apiKey: "test-key", store, retryBaseMs: 1 })
}

/** One approvals app over its own store, with the effects its tools performed. */
export interface Instance {
  app: Hono<AppEnv>
  store: DurableStore
  client: Client
  effects: ToolEffect[]
  /** The unexpected errors the app reported (instead of logging them). */
  errors: unknown[]
  /** The tools and team the app's runs use (for a host of the same agents). */
  toolkit: Toolkit
  team: TeamOptions
}

/** Builds an app over `store` and the fake LLM server; the effects land in `effects`. */
export async function instance(
  fake: FakeLLMServer,
  store: DurableStore,
  opts: {
    style?: EndpointStyle
    effects?: ToolEffect[]
    tools?: ApprovalToolsOptions
    /** Tools beside the approval tools, e.g. {@link answerTools}. */
    extraTools?: Tool[]
    app?: Partial<ApprovalsAppOptions>
  } = {},
): Promise<Instance> {
  const effects = opts.effects ?? []
  const errors: unknown[] = []
  const style = opts.style ?? "openai"
  const client = fakeClient(fake, style, store)
  const toolOptions = { ...opts.tools, onEffect: (e: ToolEffect) => effects.push(e) }
  const toolkit = opts.extraTools
    ? await createToolkit({ extraTools: [...createApprovalTools(toolOptions), ...opts.extraTools] })
    : await createApprovalToolkit(toolOptions)
  const baseUrl = style === "openai" ? `${fake.url}/v1` : fake.url
  const team = createTeam({
    tools: createApprovalTools(toolOptions),
    model: { llm: { baseUrl, style, model: "fake-model", apiKey: "test-key" } },
  })
  const app = createApprovalsApp({
    store,
    client,
    toolkit,
    team,
    security: {
      users: { alice: ALICE_TOKEN, bob: BOB_TOKEN },
      apiTokens: { ci: API_TOKEN },
      webhookSecret: WEBHOOK_SECRET,
    },
    modelUrl: baseUrl,
    pollMs: 100,
    onError: (e) => errors.push(e),
    ...opts.app,
  })
  return { app, store, client, effects, errors, toolkit, team }
}

/**
 * The usual setup of a test file: the fake LLM server answering with {@link agentReply}
 * (started before the file's tests, closed after them) and a directory of SQLite files.
 */
export function useFakeModel(): { fake: () => FakeLLMServer; files: ReturnType<typeof sqliteFiles> } {
  const files = sqliteFiles()
  let fake: FakeLLMServer | undefined
  beforeAll(async () => {
    fake = await createFakeLLMServer({ fallback: agentReply })
  })
  afterAll(async () => {
    await fake?.close()
    await files.cleanup()
  })
  return {
    files,
    fake: () => {
      if (!fake) throw new Error("useFakeModel: the fake LLM server starts in beforeAll")
      return fake
    },
  }
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

/** `app.request` with a JSON body and the test API token. */
export function postJson(
  app: Hono<AppEnv>,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  const init = {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}`, ...headers },
    body: JSON.stringify(body),
  }
  return Promise.resolve(app.request(path, init))
}

/** Posts an answer to `/webhooks/answer`, signed with the test secret (or as `sign` says). */
export function postWebhook(
  app: Hono<AppEnv>,
  answer: unknown,
  opts: { secret?: string; nowMs?: number; signature?: string | null } = {},
): Promise<Response> {
  const body = JSON.stringify(answer)
  const signature =
    opts.signature === undefined ? signBody(opts.secret ?? WEBHOOK_SECRET, body, opts.nowMs) : opts.signature
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (signature !== null) headers[SIGNATURE_HEADER] = signature
  return Promise.resolve(app.request("/webhooks/answer", { method: "POST", headers, body }))
}

/** Starts a run through the API and returns its JSON view. */
export async function startRun(
  app: Hono<AppEnv>,
  prompt: string,
  opts: { team?: boolean } = {},
): Promise<any> {
  const res = await postJson(app, "/runs", { prompt, ...opts })
  if (res.status !== 201) throw new Error(`POST /runs answered ${res.status}: ${await res.text()}`)
  return json(res)
}

/** A response's JSON body, loosely typed for assertions. */
export function json(res: Response): Promise<any> {
  return res.json() as Promise<any>
}

/** `GET path` with the test API token, and its JSON body. */
export async function getJson(app: Hono<AppEnv>, path: string): Promise<any> {
  return json(await app.request(path, { headers: { authorization: `Bearer ${API_TOKEN}` } }))
}

/**
 * Signs in through the real form (GET /signin for its CSRF value and cookie, then the form
 * post from this origin) and returns the session cookie and the page's CSRF token.
 */
export async function signIn(
  app: Hono<AppEnv>,
  token = ALICE_TOKEN,
): Promise<{ cookie: string; csrf: string }> {
  const form = await app.request("/signin")
  const pre = cookieOf(form, "tnx_signin")
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
  const res = await app.request("/signin", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://localhost", cookie: pre },
    body: new URLSearchParams({ csrf, token }).toString(),
  })
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}: ${await res.text()}`)
  const cookie = cookieOf(res, "tnx_session")
  const page = await app.request("/", { headers: { cookie } })
  const pageCsrf = /<meta name="csrf-token" content="([^"]+)">/.exec(await page.text())?.[1] ?? ""
  return { cookie, csrf: pageCsrf }
}

/** `name=value` of a cookie a response sets. */
export function cookieOf(res: Response, name: string): string {
  const line = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`))
  if (!line) throw new Error(`no ${name} cookie was set`)
  return line.split(";", 1)[0] as string
}

/** The JSON Schema of the scripted MCP elicitation of {@link answerTools}. */
export const ADDRESS_SCHEMA = {
  type: "object",
  properties: {
    street: { type: "string", title: "Street" },
    zip: { type: "string", title: "ZIP code", maxLength: 10 },
    floor: { type: "integer", title: "Floor", minimum: 0 },
    express: { type: "boolean", title: "Express delivery" },
    carrier: { type: "string", enum: ["ups", "dhl"] },
  },
  required: ["street", "zip"],
}

/**
 * Tools whose requests are answered with text or a form: `ask_customer` asks a `question`;
 * `crm__update_address` suspends like an MCP elicitation (`kind: "input"`, `data: {server,
 * tool, schema}`). Each reports what it was answered with in `answers`.
 */
export function answerTools(answers: unknown[]): Tool[] {
  const ask = defineTool({
    name: "ask_customer",
    description: "Ask the customer something",
    inputSchema: { type: "object", properties: { topic: { type: "string" } } },
    run: (_args, ctx) => {
      if (!ctx.answer) return pending({ kind: "question", prompt: "What colour would the customer like?" })
      answers.push(ctx.answer.data)
      return `The customer said: ${String(ctx.answer.data?.text)}`
    },
  })
  const address = defineTool({
    name: "crm__update_address",
    description: "Update a shipping address",
    inputSchema: { type: "object", properties: { customer: { type: "string" } } },
    run: (_args, ctx) => {
      if (!ctx.answer) {
        return pending({
          kind: "input",
          prompt: "Which shipping address should we use?",
          data: { server: "crm", tool: "update_address", schema: ADDRESS_SCHEMA },
        })
      }
      answers.push(ctx.answer.data)
      return `Address saved: ${JSON.stringify(ctx.answer.data)}`
    },
  })
  return [ask, address]
}

/** Markup in every field a request can carry; each payload sets `window.pwned` if it ever runs. */
export const XSS = {
  img: (n: number) => `<img src=x onerror="window.pwned=${n}">`,
  script: (n: number) => `</pre></script><script>window.pwned=${n}</script>`,
}
const XSS_ARGS = { [XSS.img(1)]: XSS.script(2), nested: { [XSS.script(3)]: [XSS.img(4)] } }

/** A tool whose request puts {@link XSS} payloads in its prompt, url, server, tool, path and schema. */
export function xssTool(): Tool {
  return defineTool({
    name: "xss_probe",
    description: "Probes the page's escaping",
    inputSchema: { type: "object" },
    run: (_args, ctx) =>
      ctx.answer
        ? "probed"
        : pending({
            kind: "input",
            prompt: `Fill ${XSS.img(5)} in ${XSS.script(6)}`,
            url: `javascript:window.pwned=7`,
            data: {
              server: XSS.img(8),
              tool: XSS.script(9),
              path: [XSS.img(10), "x"],
              schema: {
                type: "object",
                properties: {
                  '"><img src=x onerror="window.pwned=11">': {
                    type: "string",
                    title: XSS.img(12),
                    description: XSS.script(13),
                    enum: [XSS.img(14), "ok"],
                  },
                  note: { type: "string", default: `"><script>window.pwned=15</script>` },
                },
              },
            },
          }),
  })
}
