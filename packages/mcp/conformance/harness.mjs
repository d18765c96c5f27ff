#!/usr/bin/env node
// The client the official MCP conformance suite drives (`conformance client --command
// "node harness.mjs" --scenario <name>`): the suite appends its server URL and sets
// MCP_CONFORMANCE_SCENARIO (and, for scenarios with credentials, MCP_CONFORMANCE_CONTEXT).
//
// The scenario's data (MCP_CONFORMANCE_CONTEXT) gives credentials and, for some scenarios, the
// tool calls to make with their arguments.
//
// It uses only the public API of the built package, as an application would: connectMcp with a
// Map token store and the `oauth` options, tools() and execute(), servers(), finishLogin, and
// elicitations answered inline through ctx.resolve. Logging in is played by following the
// authorization server's redirect, as a user's browser would.
//
// The suite's checks judge what the calls sent and got; this client exits non-zero only when it
// could not drive the scenario (the server never became ready, a login did not finish, a throw).
// A tool's `isError` result is printed, not counted: some scenarios' tools answer with errors on
// purpose (a result the 2026-07-28 rules make invalid, a call the scenario does not serve).
import { pendingOf } from "@toolnexus/core"
import { connectMcp } from "../dist/index.js"

const SERVER = "conformance"
const REDIRECT = "http://localhost:3000/callback"
/** The suite's authorization servers accept this client ID metadata document URL (SEP-991). */
const CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
/** A tool that keeps asking for a login is given up on after this many (scope-retry-limit). */
const MAX_LOGINS = 3

const serverUrl = process.argv[2]
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ""
if (!serverUrl) {
  console.error("usage: MCP_CONFORMANCE_SCENARIO=<name> node harness.mjs <server-url>")
  process.exit(2)
}
const context = process.env.MCP_CONFORMANCE_CONTEXT ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) : {}

/** The `oauth` options an application would configure for the server the scenario stands for. */
function oauthOptions() {
  switch (scenario) {
    case "auth/client-credentials-basic":
      return {
        grant: "client_credentials",
        clientId: context.client_id,
        clientSecret: context.client_secret,
        tokenEndpointAuthMethod: "client_secret_basic",
      }
    case "auth/client-credentials-jwt":
      return {
        grant: "client_credentials",
        clientId: context.client_id,
        privateKey: context.private_key_pem,
        signingAlgorithm: context.signing_algorithm ?? "ES256",
        tokenEndpointAuthMethod: "private_key_jwt",
      }
    case "auth/cross-app-access-complete-flow":
      return {
        grant: "cross_app_access",
        clientId: context.client_id,
        clientSecret: context.client_secret,
        idp: {
          tokenEndpoint: context.idp_token_endpoint,
          clientId: context.idp_client_id,
          idToken: async () => context.idp_id_token,
        },
      }
    case "auth/pre-registration":
      return { redirectUrl: REDIRECT, clientId: context.client_id, clientSecret: context.client_secret }
    default:
      return { redirectUrl: REDIRECT, clientMetadataUrl: CLIENT_METADATA_URL }
  }
}

const records = new Map()
const tokenStore = {
  get: async (server) => records.get(server),
  set: async (server, record) => void records.set(server, record),
}

/** Plays the user: opens the login page, which redirects straight back with a code. */
async function login(url) {
  const response = await fetch(url, { redirect: "manual" })
  const location = response.headers.get("location")
  if (!location) throw new Error(`the login page answered ${response.status} without a redirect`)
  await mcp.finishLogin(SERVER, new URL(location, url).href)
}

/** Answers what a tool asks inline: forms are accepted as they are (their defaults fill them). */
async function resolve(request) {
  if (request.kind === "input") return { id: request.id, ok: true, data: {} }
  if (request.kind === "authorization" && request.url) {
    await login(request.url)
    return { id: request.id, ok: true }
  }
  return { id: request.id, ok: false, reason: "declined" }
}

/** Arguments for a tool from its schema: numbers 1, 2, …; strings "test"; booleans true. */
function argumentsFor(schema) {
  const args = {}
  let n = 0
  for (const [name, property] of Object.entries(schema?.properties ?? {})) {
    const type = Array.isArray(property?.type) ? property.type[0] : property?.type
    if (type === "number" || type === "integer") args[name] = ++n
    else if (type === "boolean") args[name] = true
    else if (type === "string") args[name] = "test"
  }
  return args
}

/**
 * The calls to make: those the scenario names in its context (`toolCalls`, with their
 * arguments), else every tool once with arguments made from its schema.
 */
function plannedCalls() {
  const tools = mcp.tools().filter((t) => t.name !== `${SERVER}__sign_in`)
  if (!Array.isArray(context.toolCalls))
    return tools.map((tool) => ({ tool, args: argumentsFor(tool.inputSchema) }))
  return context.toolCalls.map(({ name, arguments: args }) => {
    const tool = tools.find((t) => t.name === `${SERVER}__${name}`)
    if (!tool) throw new Error(`the scenario's tool ${name} is not offered`)
    return { tool, args: args ?? {} }
  })
}

/** Runs one tool to its end: a login it suspends on is completed and the call retried. */
async function run(tool, args = {}) {
  let answer
  for (let attempt = 0; attempt <= MAX_LOGINS; attempt++) {
    const result = await tool.execute(args, answer ? { resolve, answer } : { resolve })
    const request = pendingOf(result)
    if (!request) return result
    if (request.kind !== "authorization" || !request.url)
      throw new Error(`unexpected request: ${request.prompt}`)
    await login(request.url)
    answer = { id: request.id, ok: true }
  }
  throw new Error(`${tool.name} still asks for a login after ${MAX_LOGINS} logins`)
}

const mcp = await connectMcp({
  servers: { [SERVER]: { url: serverUrl } },
  tokenStore,
  oauth: oauthOptions(),
  connectTimeoutMs: 20_000,
  callTimeoutMs: 20_000,
})
let failed = false
try {
  // A server that wants a login before it lists anything offers its sign-in tool first.
  for (const tool of mcp.tools().filter((t) => t.name === `${SERVER}__sign_in`)) await run(tool)
  const [status] = mcp.servers()
  console.error(`server: ${JSON.stringify(status)}`)
  if (status.status !== "ready") throw new Error(`the server is not ready: ${status.error}`)
  for (const { tool, args } of plannedCalls()) {
    const result = await run(tool, args)
    console.error(`${tool.name}: ${result.isError ? "error" : "ok"}: ${result.output}`)
  }
} catch (error) {
  console.error(error)
  failed = true
} finally {
  await mcp.close()
}
process.exit(failed ? 1 : 0)
