import { fetch as undiciFetch } from "undici"
import { ConfigError } from "../errors.js"
import { sharedAgent } from "../internal/http-agent.js"
import type { JSONSchema, Tool, ToolContext, ToolResult } from "../types.js"
import { createCredentialedFetch } from "./outbound-credentials.js"
import { createSecretRedactor } from "./secret-redactor.js"
import { assertToolName } from "./tool-name.js"

/** An HTTP method an {@link httpTool} can use. */
export type HttpToolMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE"

/** Options of {@link httpTool}: one HTTP endpoint exposed to the model as a tool. */
export interface HttpToolOptions {
  /** The tool name the model sees; letters, digits, `_` or `-`, 1 to 64 characters. */
  name: string
  /** What the tool does, for the model. */
  description: string
  /** The HTTP method. */
  method: HttpToolMethod
  /** The absolute http(s) URL; `{placeholders}` are filled from the args of the same name, URL-encoded. */
  url: string
  /**
   * Request headers. Values may hold `${ENV_VAR}` references, read from `process.env` at call
   * time; the resolved values never appear in any output or error.
   */
  headers?: Record<string, string>
  /** Names of args sent as the query string; arrays repeat the key, absent args are skipped. */
  query?: string[]
  /**
   * How the remaining args are sent: `"json"` (default), `"form"`
   * (`application/x-www-form-urlencoded`) or `"raw"` (the `body` arg as a string). For GET and
   * DELETE the remaining args go to the query string instead.
   */
  body?: "json" | "form" | "raw"
  /** The JSON Schema of the args, shown to the model. */
  inputSchema: JSONSchema
  /** How long the whole request, body included, may take; default 30 000 ms. */
  timeoutMs?: number
  /**
   * `"text"` (default): the output is the response body text. `"json"`: the body must parse as
   * JSON (else the result is an error) and the output is its compact re-serialisation.
   */
  resultMode?: "text" | "json"
}

const METHODS: ReadonlySet<string> = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"])
const BODY_MODES: ReadonlySet<string> = new Set(["json", "form", "raw"])
const RESULT_MODES: ReadonlySet<string> = new Set(["text", "json"])
const DEFAULT_TIMEOUT_MS = 30_000
// setTimeout fires at once for delays above 2^31 - 1 ms, which would turn a huge timeout into none.
const MAX_TIMEOUT_MS = 2_147_483_647
const PLACEHOLDER = /\{([A-Za-z0-9_.-]+)\}/g
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** A header whose value is resolved from the environment at call time. */
interface HeaderTemplate {
  name: string
  value: string
  envVars: string[]
}

/**
 * Creates a tool that calls one HTTP endpoint. URL placeholders, the `query` list and the body
 * mode decide where each arg goes; `${ENV_VAR}` references in header values are resolved at
 * call time and never echoed. `execute` never throws: every failure is an `isError` result.
 *
 * @param opts - The endpoint and how args map onto the request.
 * @returns A tool with source `"http"`.
 * @throws ConfigError when the name, method, url, headers, query, body, timeoutMs or
 *   resultMode option is invalid.
 * @example
 * ```ts
 * const getIssue = httpTool({
 *   name: "get_issue",
 *   description: "Fetch a GitHub issue",
 *   method: "GET",
 *   url: "https://api.github.com/repos/{owner}/{repo}/issues/{number}",
 *   headers: { authorization: "Bearer ${GITHUB_TOKEN}" },
 *   inputSchema: {
 *     type: "object",
 *     properties: { owner: { type: "string" }, repo: { type: "string" }, number: { type: "integer" } },
 *     required: ["owner", "repo", "number"],
 *   },
 *   resultMode: "json",
 * })
 * ```
 */
export function httpTool(opts: HttpToolOptions): Tool {
  if (typeof opts !== "object" || opts === null) throw new ConfigError("httpTool: options must be an object")
  assertToolName(opts.name)
  const config = validate(opts)
  return {
    name: opts.name,
    description: opts.description,
    inputSchema: opts.inputSchema,
    source: "http",
    execute: (args, ctx) => perform(config, args, ctx),
  }
}

/** The validated, pre-parsed options a call works from. */
interface HttpToolConfig {
  method: HttpToolMethod
  url: string
  placeholders: Set<string>
  headers: HeaderTemplate[]
  query: Set<string>
  body: "json" | "form" | "raw"
  timeoutMs: number
  resultMode: "text" | "json"
}

function validate(opts: HttpToolOptions): HttpToolConfig {
  const tool = `httpTool ${JSON.stringify(opts.name)}`
  if (typeof opts.description !== "string") {
    throw new ConfigError(`${tool}: option "description" must be a string`)
  }
  if (typeof opts.inputSchema !== "object" || opts.inputSchema === null || Array.isArray(opts.inputSchema)) {
    throw new ConfigError(`${tool}: option "inputSchema" must be a JSON Schema object`)
  }
  if (typeof opts.method !== "string" || !METHODS.has(opts.method)) {
    throw new ConfigError(
      `${tool}: option "method" must be one of ${[...METHODS].join(", ")}; ` +
        `got ${JSON.stringify(opts.method)}`,
    )
  }
  if (typeof opts.url !== "string") throw new ConfigError(`${tool}: option "url" must be a string`)
  const placeholders = new Set<string>()
  for (const m of opts.url.matchAll(PLACEHOLDER)) placeholders.add(m[1]!)
  // Check the shape with every placeholder filled, since that is what a call will parse.
  let parsed: URL
  try {
    parsed = new URL(opts.url.replace(PLACEHOLDER, "x"))
  } catch {
    throw new ConfigError(`${tool}: option "url" is not an absolute URL: ${JSON.stringify(opts.url)}`)
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigError(
      `${tool}: option "url" must use http or https; got ${JSON.stringify(parsed.protocol)}`,
    )
  }

  const headers: HeaderTemplate[] = []
  if (opts.headers !== undefined) {
    if (typeof opts.headers !== "object" || opts.headers === null || Array.isArray(opts.headers)) {
      throw new ConfigError(`${tool}: option "headers" must be an object of strings`)
    }
    for (const [name, value] of Object.entries(opts.headers)) {
      if (!HEADER_NAME.test(name)) {
        throw new ConfigError(`${tool}: option "headers" has an invalid header name ${JSON.stringify(name)}`)
      }
      // The value is not quoted: it may hold a literal credential.
      if (typeof value !== "string") {
        throw new ConfigError(`${tool}: option "headers" value of ${JSON.stringify(name)} must be a string`)
      }
      const envVars = [...value.matchAll(ENV_REF)].map((m) => m[1]!)
      headers.push({ name, value, envVars })
    }
  }

  if (
    opts.query !== undefined &&
    !(Array.isArray(opts.query) && opts.query.every((q) => typeof q === "string"))
  ) {
    throw new ConfigError(`${tool}: option "query" must be an array of arg names`)
  }
  const body = opts.body ?? "json"
  if (typeof body !== "string" || !BODY_MODES.has(body)) {
    throw new ConfigError(
      `${tool}: option "body" must be one of ${[...BODY_MODES].join(", ")}; got ${JSON.stringify(opts.body)}`,
    )
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  if (
    typeof timeoutMs !== "number" ||
    !Number.isFinite(timeoutMs) ||
    timeoutMs <= 0 ||
    timeoutMs > MAX_TIMEOUT_MS
  ) {
    throw new ConfigError(
      `${tool}: option "timeoutMs" must be a positive number of milliseconds up to ${MAX_TIMEOUT_MS}; ` +
        `got ${String(opts.timeoutMs)}`,
    )
  }
  const resultMode = opts.resultMode ?? "text"
  if (typeof resultMode !== "string" || !RESULT_MODES.has(resultMode)) {
    throw new ConfigError(
      `${tool}: option "resultMode" must be "text" or "json"; got ${JSON.stringify(opts.resultMode)}`,
    )
  }
  return {
    method: opts.method,
    url: opts.url,
    placeholders,
    headers,
    query: new Set(opts.query ?? []),
    body,
    timeoutMs,
    resultMode,
  }
}

function error(output: string, status?: number): ToolResult {
  return status === undefined ? { output, isError: true } : { output, isError: true, metadata: { status } }
}

/** Turns an arg value into the string sent in a URL or form field. */
function stringify(value: unknown): string {
  if (typeof value === "string") return value
  if (typeof value === "object" && value !== null) return JSON.stringify(value)
  return String(value)
}

/** Appends `name=value` pairs for one arg; arrays repeat the key, absent values add nothing. */
function appendParam(params: URLSearchParams, name: string, value: unknown): void {
  if (value === undefined || value === null) return
  if (Array.isArray(value)) {
    for (const item of value) if (item !== undefined && item !== null) params.append(name, stringify(item))
    return
  }
  params.append(name, stringify(value))
}

async function perform(
  config: HttpToolConfig,
  rawArgs: Record<string, unknown>,
  ctx: ToolContext | undefined,
): Promise<ToolResult> {
  // The model controls args; anything but a plain object is treated as no args.
  const args: Record<string, unknown> =
    typeof rawArgs === "object" && rawArgs !== null && !Array.isArray(rawArgs) ? rawArgs : {}
  const signal = ctx?.signal
  if (signal?.aborted) return error("aborted")

  let target: URL
  const remaining: Record<string, unknown> = {}
  const queryParams = new URLSearchParams()
  try {
    let missing: string | undefined
    const filled = config.url.replace(PLACEHOLDER, (_, name: string) => {
      const value = args[name]
      if (value === undefined || value === null) {
        missing ??= name
        return ""
      }
      return encodeURIComponent(stringify(value))
    })
    if (missing !== undefined) return error(`missing value for URL placeholder {${missing}}`)
    target = new URL(filled)
    for (const [name, value] of Object.entries(args)) {
      if (config.placeholders.has(name)) continue
      if (config.query.has(name)) appendParam(queryParams, name, value)
      else remaining[name] = value
    }
  } catch (err) {
    return error(`invalid request URL: ${messageOf(err)}`)
  }

  const secrets: string[] = []
  const headers: Record<string, string> = {}
  for (const h of config.headers) {
    let unset: string | undefined
    const value = h.value.replace(ENV_REF, (_, name: string) => {
      const v = process.env[name]
      if (v === undefined) {
        unset ??= name
        return ""
      }
      secrets.push(v)
      return v
    })
    if (unset !== undefined) {
      return error(`environment variable ${unset} (used by header ${JSON.stringify(h.name)}) is not set`)
    }
    headers[h.name] = value
  }
  // The configured headers are this origin's credentials; the content type added below is not.
  const credentials = { ...headers }
  // Every resolved value, so a server or library echoing a header cannot leak it to the model.
  const redact = createSecretRedactor(secrets, { minLength: 1 })

  let body: string | undefined
  const hasContentType = Object.keys(headers).some((k) => k.toLowerCase() === "content-type")
  const setContentType = (type: string): void => {
    // A header from the options wins: it may name a vendor media type.
    if (!hasContentType) headers["content-type"] = type
  }
  if (config.method === "GET" || config.method === "DELETE") {
    for (const [name, value] of Object.entries(remaining)) appendParam(queryParams, name, value)
  } else if (config.body === "json") {
    body = JSON.stringify(remaining)
    setContentType("application/json")
  } else if (config.body === "form") {
    const form = new URLSearchParams()
    for (const [name, value] of Object.entries(remaining)) appendParam(form, name, value)
    body = form.toString()
    setContentType("application/x-www-form-urlencoded")
  } else {
    const raw = remaining.body
    body = raw === undefined || raw === null ? "" : stringify(raw)
    setContentType("text/plain")
  }
  const qs = queryParams.toString()
  if (qs !== "") target.search = target.search === "" ? qs : `${target.search}&${qs}`

  const controller = new AbortController()
  let timedOut = false
  let aborted = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, config.timeoutMs)
  const onAbort = (): void => {
    aborted = true
    controller.abort()
  }
  signal?.addEventListener("abort", onAbort, { once: true })
  try {
    // The headers go only to the URL's own origin: a redirect elsewhere is followed without them.
    const send = createCredentialedFetch({ origin: target, headers: credentials, fetch: sharedFetch })
    const res = await send(target, { method: config.method, headers, body, signal: controller.signal })
    const text = redact(await res.text())
    const status = res.status
    if (status < 200 || status > 299) return error(`HTTP ${status}: ${text}`, status)
    if (config.resultMode === "text") return { output: text, isError: false, metadata: { status } }
    try {
      // Redacted before parsing and again after, since re-serialising may re-escape a secret.
      return { output: redact(JSON.stringify(JSON.parse(text))), isError: false, metadata: { status } }
    } catch (err) {
      return error(`response is not valid JSON: ${redact(messageOf(err))}`, status)
    }
  } catch (err) {
    if (timedOut) return error(`timed out after ${config.timeoutMs} ms`)
    if (aborted || signal?.aborted) return error("aborted")
    return error(`request failed: ${redact(messageOf(err))}`)
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener("abort", onAbort)
  }
}

/** undici's `fetch` on the process-wide keep-alive dispatcher. */
const sharedFetch = ((input: string | URL, init?: RequestInit) =>
  undiciFetch(input, { ...(init as object), dispatcher: sharedAgent() })) as unknown as typeof fetch

function messageOf(err: unknown): string {
  if (err instanceof Error) {
    // fetch reports a network failure as "fetch failed" with the socket's error as the cause.
    const cause = (err as { cause?: unknown }).cause
    if (err.message === "fetch failed" && cause instanceof Error) return messageOf(cause)
    const code = (err as { code?: unknown }).code
    // Node's network errors carry the useful part in `code` when the message is generic.
    return typeof code === "string" && !err.message.includes(code) ? `${err.message} (${code})` : err.message
  }
  return String(err)
}
