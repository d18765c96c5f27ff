import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type RunHost, type Tool, defineTool, hostAgent } from "@toolnexus/core"
import { type DurableStore, type StoreHostAgent, createStoreHost, openStore } from "@toolnexus/durable"
import { type ToolnexusMcpServer, createMcpServer, hostedToolAgents } from "@toolnexus/mcp/server"
import { createTreeModel } from "./model.js"

/** Options of {@link createAgentServer}. */
export interface AgentServerOptions {
  /** Where the runs (SQLite), the state key and the release log live. */
  dataDir: string
  /**
   * Secrets sealing `requestState` (each at least 32 bytes); every process that may take a
   * retry needs the same. Default: the `MCP_AGENT_STATE_KEY` variable, else a random key kept
   * in `<dataDir>/state.key` (so processes on one data folder share it).
   */
  stateKeys?: string[]
  /** Bearer token ⇒ principal; absent: no authentication (every HTTP caller is "anonymous"). */
  tokens?: Record<string, string>
  /** How long a sealed `requestState` may be echoed back, in ms (default: the server's, 24 hours). */
  stateTtlMs?: number
  /** Sweep expired requests every this many ms; `false` for short-lived CLI processes. */
  sweepEveryMs?: number | false
}

/** The served agent server: the MCP server, and the host a second door answers through. */
export interface AgentServer {
  /** The MCP server (`fetch` for HTTP, `connectStdio` for stdio). */
  mcp: ToolnexusMcpServer
  /** The host: open requests, answers, results. */
  host: RunHost
  /** Which model the tree runs on. */
  model: string
  /** Stops serving and closes the host and the store. */
  close(): Promise<void>
}

/** One release as the log records it. */
export interface Release {
  /** The service shipped. */
  service: string
  /** Its version. */
  version: string
  /** The process that ran the tool (after a restart: the replacement's). */
  pid: number
}

/**
 * The release tool, gated by approval: nothing ships before a human says yes, and a shipped
 * release is appended to `log` (one JSON line each), so a test can count them.
 */
export function shipRelease(log: string): Tool {
  return defineTool({
    name: "ship_release",
    description: "Ships a service's version to production (asks a human first)",
    inputSchema: {
      type: "object",
      properties: {
        service: { type: "string", description: "The service, e.g. checkout" },
        version: { type: "string", description: "The version, e.g. 1.4.2" },
      },
      required: ["service", "version"],
    },
    needsApproval: true,
    approvalPrompt: (args) => `Ship ${String(args.service)} ${String(args.version)} to production?`,
    run: ({ service, version }) => {
      const release: Release = { service: String(service), version: String(version), pid: process.pid }
      appendFileSync(log, `${JSON.stringify(release)}\n`)
      return `shipped ${release.service} ${release.version}`
    },
  }) as Tool
}

/**
 * The `ops` agent tree (a lead that hands releases to a `releaser` sub-agent holding
 * `ship_release`) and the tool itself, on a SQLite host, served as MCP tools `ops` and
 * `ship_release`. A release waits for approval: the MCP host is asked through `input_required`
 * (or, when it cannot ask, told the request id to answer elsewhere), and any process on the
 * same data folder can answer it.
 */
export async function createAgentServer(opts: AgentServerOptions): Promise<AgentServer> {
  mkdirSync(opts.dataDir, { recursive: true })
  const store: DurableStore = await openStore(`sqlite:${join(opts.dataDir, "runs.db")}`)
  const ship = shipRelease(join(opts.dataDir, "releases.jsonl"))
  const model = createTreeModel()
  const tree = hostAgent({
    name: "ops",
    runtime: {
      root: "ops",
      llm: model.llm,
      ...(model.fetch ? { fetch: model.fetch } : {}),
      registry: {
        ops: {
          name: "ops",
          does: "runs operations; hands every release to the releaser",
          soul: "You lead operations. Hand every release request to the releaser agent with the task tool, then report.",
          team: ["releaser"],
          budget: { maxTurns: 6 },
        },
        releaser: {
          name: "releaser",
          does: "ships releases with ship_release, each after a human approves",
          soul: "You ship releases with ship_release; it asks a human on its own, so just call it.",
          tools: [ship],
          budget: { maxTurns: 4 },
        },
      },
    },
  }) as StoreHostAgent
  const host = createStoreHost({
    store,
    agents: [tree, ...((await hostedToolAgents([ship], { store })) as StoreHostAgent[])],
    ...(opts.sweepEveryMs !== undefined ? { sweepEveryMs: opts.sweepEveryMs } : {}),
  })
  const tokens = opts.tokens
  const mcp = createMcpServer({
    host,
    agents: ["ops"],
    tools: [ship],
    name: "toolnexus-ops",
    version: "1.0.0",
    stateKeys: opts.stateKeys ?? [stateKeyOf(opts.dataDir)],
    ...(opts.stateTtlMs !== undefined ? { stateTtlMs: opts.stateTtlMs } : {}),
    ...(tokens ? { authenticate: (req: Request) => principalOf(req, tokens) } : {}),
  })
  return {
    mcp,
    host,
    model: model.label,
    async close() {
      await mcp.close()
      await host.close()
      await store.close()
    },
  }
}

/** `MCP_AGENT_STATE_KEY`, else the data folder's key, made once (the first process wins). */
function stateKeyOf(dataDir: string): string {
  const fromEnv = process.env.MCP_AGENT_STATE_KEY
  if (fromEnv) return fromEnv
  const file = join(dataDir, "state.key")
  try {
    writeFileSync(file, randomBytes(32).toString("hex"), { flag: "wx", mode: 0o600 })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  }
  return readFileSync(file, "utf8").trim()
}

/** The principal of a bearer token, or a 401 (compared in constant time, by digest). */
function principalOf(req: Request, tokens: Record<string, string>): string | Response {
  const presented = /^Bearer (\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1]
  if (presented !== undefined) {
    const digest = sha256(presented)
    for (const [token, principal] of Object.entries(tokens))
      if (timingSafeEqual(digest, sha256(token))) return principal
  }
  return new Response(
    JSON.stringify({ error: { code: "TNX_UNAUTHORIZED", message: "a bearer token is needed" } }),
    {
      status: 401,
      headers: { "content-type": "application/json", "www-authenticate": 'Bearer realm="toolnexus-ops"' },
    },
  )
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest()
}

/** `alice=token1,bob=token2` ⇒ token ⇒ principal; undefined when unset or empty. */
export function parseTokens(spec: string | undefined): Record<string, string> | undefined {
  if (!spec) return undefined
  const tokens: Record<string, string> = {}
  for (const pair of spec.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0 || at === pair.length - 1)
      throw new Error(`MCP_AGENT_TOKENS: "${pair.slice(0, at > 0 ? at : 20)}…" is not principal=token`)
    tokens[pair.slice(at + 1).trim()] = pair.slice(0, at).trim()
  }
  return tokens
}
