import { type createPublicKey, generateKeyPairSync, randomBytes, verify } from "node:crypto"
import type { Server as HttpServer } from "node:http"
import type { AddressInfo } from "node:net"
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { mcpHandler } from "./http-server.js"

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"

/** One request the token endpoint (or the identity provider's) received. */
export interface TokenRequest {
  grant: string
  /** How the client authenticated: basic, post, private_key_jwt, or none. */
  auth: string
  body: Record<string, string>
  /** The claims of a verified client assertion. */
  claims?: Record<string, unknown>
}

export interface M2mFixture {
  url: string
  issuer: string
  idpTokenEndpoint: string
  clientId: string
  clientSecret: string
  /** A PKCS#8 PEM (ES256) whose public half the token endpoint checks assertions with. */
  privateKeyPem: string
  idToken: string
  tokenRequests: TokenRequest[]
  idpRequests: TokenRequest[]
  /** Access tokens the MCP endpoint accepts now. */
  issued: string[]
  /** Calls the MCP endpoint refused for want of a valid token. */
  refused: () => number
  /** Forgets every token issued so far: the next MCP request gets a 401. */
  revokeAll(): void
  /** What the token endpoint answers: tokens, or this OAuth error. */
  settings: { expiresIn: number; refuse?: { error: string; description: string } }
  close(): Promise<void>
}

/**
 * A machine-to-machine authorization server (client_credentials and jwt-bearer), an identity
 * provider doing RFC 8693 token exchange, and an MCP server behind bearer tokens, on 127.0.0.1.
 * The SDK's own auth router issues only authorization-code tokens, hence this one.
 */
export async function serveM2mMcp(
  build: () => McpServer,
  methods: string[] = ["client_secret_basic", "client_secret_post", "private_key_jwt"],
): Promise<M2mFixture> {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
  const privateKeyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString()
  const clientId = "m2m-agent"
  const clientSecret = `secret-${randomBytes(8).toString("hex")}`
  const idToken = `idtoken-${randomBytes(8).toString("hex")}`
  const tokens = new Map<string, number>() // token → expiry (ms)
  const assertions = new Set<string>()
  const tokenRequests: TokenRequest[] = []
  const idpRequests: TokenRequest[] = []
  const settings: M2mFixture["settings"] = { expiresIn: 3600 }
  let refused = 0

  const app = createMcpExpressApp()
  const http: HttpServer = await new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server))
  })
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  const mcpUrl = `${base}/mcp`
  const prm = `${base}/.well-known/oauth-protected-resource/mcp`

  app.get("/.well-known/oauth-protected-resource/mcp", (_req: any, res: any) => {
    res.json({ resource: mcpUrl, authorization_servers: [base] })
  })
  app.get("/.well-known/oauth-authorization-server", (_req: any, res: any) => {
    res.json({
      issuer: base,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/token`,
      response_types_supported: ["code"],
      grant_types_supported: ["client_credentials", JWT_BEARER],
      token_endpoint_auth_methods_supported: methods,
      token_endpoint_auth_signing_alg_values_supported: ["ES256"],
    })
  })

  const form = (req: any): Record<string, string> => ({ ...(req.body ?? {}) })
  app.post("/token", expressForm(), (req: any, res: any) => {
    const body = form(req)
    const request: TokenRequest = { grant: body.grant_type ?? "", auth: "none", body }
    tokenRequests.push(request)
    const fail = (status: number, error: string, description: string) =>
      res.status(status).json({ error, error_description: description })
    const header = String(req.headers.authorization ?? "")
    let id: string | undefined
    if (header.startsWith("Basic ")) {
      const [user, pass] = Buffer.from(header.slice(6), "base64").toString().split(":")
      request.auth = "basic"
      id = decodeURIComponent(user ?? "")
      if (decodeURIComponent(pass ?? "") !== clientSecret) return fail(401, "invalid_client", "bad secret")
    } else if (body.client_assertion) {
      request.auth = "private_key_jwt"
      const claims = verifyEs256(body.client_assertion, publicKey)
      if (!claims) return fail(401, "invalid_client", "the client assertion's signature does not verify")
      request.claims = claims
      if (claims.aud !== base && claims.aud !== `${base}/`)
        return fail(401, "invalid_client", "wrong audience")
      id = String(claims.sub)
    } else if (body.client_secret !== undefined) {
      request.auth = "post"
      id = body.client_id
      if (body.client_secret !== clientSecret) return fail(401, "invalid_client", "bad secret")
    }
    if (id !== clientId) return fail(401, "invalid_client", "unknown client")
    if (settings.refuse) return fail(400, settings.refuse.error, settings.refuse.description)
    if (request.grant === JWT_BEARER && !assertions.has(body.assertion ?? ""))
      return fail(400, "invalid_grant", "unknown assertion")
    if (request.grant !== "client_credentials" && request.grant !== JWT_BEARER)
      return fail(400, "unsupported_grant_type", request.grant)
    const token = `m2m-${randomBytes(12).toString("hex")}`
    tokens.set(token, Date.now() + settings.expiresIn * 1000)
    res.json({ access_token: token, token_type: "Bearer", expires_in: settings.expiresIn })
  })

  app.post("/idp/token", expressForm(), (req: any, res: any) => {
    const body = form(req)
    idpRequests.push({ grant: body.grant_type ?? "", auth: "none", body })
    if (body.grant_type !== TOKEN_EXCHANGE || body.subject_token !== idToken) {
      return res.status(400).json({ error: "invalid_grant", error_description: "unknown subject token" })
    }
    const assertion = `idjag-${randomBytes(12).toString("hex")}`
    assertions.add(assertion)
    res.json({
      access_token: assertion,
      issued_token_type: "urn:ietf:params:oauth:token-type:id-jag",
      token_type: "N_A",
    })
  })

  const { handle, transports } = mcpHandler(build)
  app.all("/mcp", (req: any, res: any) => {
    const header = String(req.headers.authorization ?? "")
    const token = header.startsWith("Bearer ") ? header.slice(7) : ""
    const expiry = tokens.get(token)
    if (expiry === undefined || expiry <= Date.now()) {
      refused++
      res.set("WWW-Authenticate", `Bearer resource_metadata="${prm}"`)
      return res.status(401).json({ error: "invalid_token" })
    }
    void handle(req, res)
  })

  return {
    url: mcpUrl,
    issuer: base,
    idpTokenEndpoint: `${base}/idp/token`,
    clientId,
    clientSecret,
    privateKeyPem,
    idToken,
    tokenRequests,
    idpRequests,
    get issued() {
      return [...tokens.keys()]
    },
    refused: () => refused,
    revokeAll: () => tokens.clear(),
    settings,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => {})
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}

/** The urlencoded body parser of the express that the SDK's app is built on. */
function expressForm(): any {
  return async (req: any, _res: any, next: () => void) => {
    if (req.body && Object.keys(req.body).length > 0) return next()
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    req.body = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()))
    next()
  }
}

/** Verifies an ES256 compact JWS with node:crypto; the claims, or undefined. */
function verifyEs256(
  jwt: string,
  key: ReturnType<typeof createPublicKey>,
): Record<string, unknown> | undefined {
  const [header, payload, signature] = jwt.split(".")
  if (!header || !payload || !signature) return undefined
  const ok = verify(
    "sha256",
    Buffer.from(`${header}.${payload}`),
    { key, dsaEncoding: "ieee-p1363" },
    Buffer.from(signature, "base64url"),
  )
  return ok ? JSON.parse(Buffer.from(payload, "base64url").toString()) : undefined
}
