import { randomBytes } from "node:crypto"
import type { Server as HttpServer } from "node:http"
import type { AddressInfo } from "node:net"
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js"
import { InvalidGrantError, InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js"
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js"
import type {
  AuthorizationParams,
  OAuthServerProvider,
} from "@modelcontextprotocol/sdk/server/auth/provider.js"
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js"
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js"
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import { mcpHandler } from "./http-server.js"

/** A local authorization server and an MCP server behind bearer auth, in one test process. */
export interface OAuthFixture {
  url: string
  /** Every access and refresh token issued: the strings that must never leak. */
  issued: string[]
  /** Plays the user: opens the login URL, approves, returns the redirect back to the host. */
  login(authorizationUrl: string): Promise<string>
  /** Revokes every token issued so far; refresh tokens stop working too. */
  revokeAll(): void
  /** Registers a client beforehand (as for servers without dynamic registration). */
  registerClient(clientId: string, redirectUri: string): void
  /** Calls that got through with a valid token. */
  authorizedCalls: () => number
  close(): Promise<void>
}

class MemoryAuthProvider implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>()
  readonly codes = new Map<string, { client: string; params: AuthorizationParams }>()
  readonly tokens = new Map<string, AuthInfo>()
  readonly issued: string[] = []
  readonly refreshTokens = new Set<string>()

  get clientsStore(): OAuthRegisteredClientsStore {
    return {
      getClient: async (id) => this.clients.get(id),
      registerClient: async (client) => {
        const full = {
          ...client,
          client_id: `client-${randomBytes(4).toString("hex")}`,
          client_id_issued_at: 0,
        }
        this.clients.set(full.client_id, full as OAuthClientInformationFull)
        return full as OAuthClientInformationFull
      },
    }
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: any): Promise<void> {
    const code = `code-${randomBytes(8).toString("hex")}`
    this.codes.set(code, { client: client.client_id, params })
    const target = new URL(params.redirectUri)
    target.searchParams.set("code", code)
    if (params.state !== undefined) target.searchParams.set("state", params.state)
    res.redirect(302, target.href)
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const entry = this.codes.get(code)
    if (!entry) throw new Error("unknown code")
    return entry.params.codeChallenge
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    const entry = this.codes.get(code)
    if (!entry || entry.client !== client.client_id) throw new Error("invalid code")
    this.codes.delete(code)
    return this.#issue(client.client_id)
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    if (!this.refreshTokens.has(refreshToken)) throw new InvalidGrantError("refresh token revoked")
    return this.#issue(client.client_id)
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const info = this.tokens.get(token)
    if (!info) throw new InvalidTokenError("unknown or revoked token")
    return info
  }

  #issue(clientId: string): OAuthTokens {
    const access = `at-${randomBytes(16).toString("hex")}`
    const refresh = `rt-${randomBytes(16).toString("hex")}`
    this.issued.push(access, refresh)
    this.refreshTokens.add(refresh)
    this.tokens.set(access, {
      token: access,
      clientId,
      scopes: [],
      expiresAt: Math.floor(Date.now() / 1000) + 3600,
    })
    return { access_token: access, token_type: "Bearer", expires_in: 3600, refresh_token: refresh }
  }
}

/** Starts the fixture on 127.0.0.1; `build` makes the MCP server behind the bearer check. */
export async function serveOAuthMcp(build: () => McpServer): Promise<OAuthFixture> {
  const provider = new MemoryAuthProvider()
  const app = createMcpExpressApp()
  const http: HttpServer = await new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server))
  })
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  const mcpUrl = new URL(`${base}/mcp`)
  app.use(mcpAuthRouter({ provider, issuerUrl: new URL(base), resourceServerUrl: mcpUrl }))
  const { handle, transports } = mcpHandler(build)
  let authorized = 0
  app.all(
    "/mcp",
    requireBearerAuth({
      verifier: provider,
      resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
    }),
    (req: any, res: any) => {
      authorized++
      void handle(req, res)
    },
  )
  return {
    url: mcpUrl.href,
    issued: provider.issued,
    authorizedCalls: () => authorized,
    revokeAll() {
      provider.tokens.clear()
      provider.refreshTokens.clear()
    },
    registerClient(clientId, redirectUri) {
      provider.clients.set(clientId, {
        client_id: clientId,
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: "none",
      } as OAuthClientInformationFull)
    },
    async login(authorizationUrl) {
      const response = await fetch(authorizationUrl, { redirect: "manual" })
      const location = response.headers.get("location")
      if (response.status !== 302 || !location) throw new Error(`login failed: HTTP ${response.status}`)
      return location
    },
    async close() {
      for (const t of transports.values()) await t.close().catch(() => {})
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}
