import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { ConfigError, createToolkit } from "@toolnexus/core"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { type McpConnection, type McpOAuthOptions, type TokenStore, connectMcp } from "../src/index.js"
import { type M2mFixture, serveM2mMcp } from "./m2m-server.js"

function build(): McpServer {
  const server = new McpServer({ name: "m2m", version: "1.0.0" })
  server.registerTool("ping", { description: "Answers pong" }, async () => ({
    content: [{ type: "text", text: "pong" }],
  }))
  return server
}

function mapStore(): TokenStore & { records: Map<string, unknown> } {
  const records = new Map<string, unknown>()
  return {
    records,
    get: async (server) => records.get(server),
    set: async (server, value) => void records.set(server, structuredClone(value)),
  }
}

let fixture: M2mFixture
const open: McpConnection[] = []

beforeAll(async () => {
  fixture = await serveM2mMcp(build)
})
afterAll(async () => {
  for (const mcp of open) await mcp.close()
  await fixture?.close()
})

async function connect(oauth: McpOAuthOptions, tokenStore: TokenStore = mapStore()): Promise<McpConnection> {
  const mcp = await connectMcp({ servers: { svc: { url: fixture.url } }, tokenStore, oauth })
  open.push(mcp)
  return mcp
}

function secrets(): string[] {
  return [fixture.clientSecret, fixture.privateKeyPem, fixture.idToken]
}

describe("client_credentials", () => {
  it("client_secret_basic: connects with no login, asks for the scope, keeps the token in the store", async () => {
    const store = mapStore()
    const before = fixture.tokenRequests.length
    const mcp = await connect(
      {
        grant: "client_credentials",
        clientId: fixture.clientId,
        clientSecret: fixture.clientSecret,
        tokenEndpointAuthMethod: "client_secret_basic",
        scope: "tools:read",
      },
      store,
    )
    expect(mcp.servers()[0]).toMatchObject({ name: "svc", status: "ready", tools: 1 })
    expect(mcp.servers()[0]?.authorizationUrl).toBeUndefined()
    expect(mcp.tools().map((t) => t.name)).toEqual(["svc__ping"])
    const [request] = fixture.tokenRequests.slice(before)
    expect(request).toMatchObject({
      grant: "client_credentials",
      auth: "basic",
      body: { scope: "tools:read" },
    })
    expect(request?.body.client_secret).toBeUndefined()
    const record = JSON.stringify(store.records.get("svc"))
    expect(fixture.issued.some((token) => record.includes(token))).toBe(true)
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    expect(await toolkit.execute("svc__ping", {})).toMatchObject({ isError: false, output: "pong" })
  })

  it("client_secret_post: the credentials go in the body", async () => {
    const before = fixture.tokenRequests.length
    const mcp = await connect({
      grant: "client_credentials",
      clientId: fixture.clientId,
      clientSecret: fixture.clientSecret,
      tokenEndpointAuthMethod: "client_secret_post",
    })
    expect(mcp.servers()[0]?.status).toBe("ready")
    expect(fixture.tokenRequests.slice(before)[0]).toMatchObject({
      auth: "post",
      body: { client_id: fixture.clientId, client_secret: fixture.clientSecret },
    })
  })

  it("private_key_jwt: a signed assertion naming the client, for the issuer, and no secret", async () => {
    const before = fixture.tokenRequests.length
    const mcp = await connect({
      grant: "client_credentials",
      clientId: fixture.clientId,
      privateKey: fixture.privateKeyPem,
      signingAlgorithm: "ES256",
    })
    expect(mcp.servers()[0]?.status).toBe("ready")
    const [request] = fixture.tokenRequests.slice(before)
    expect(request).toMatchObject({ auth: "private_key_jwt", grant: "client_credentials" })
    expect(request?.claims).toMatchObject({
      iss: fixture.clientId,
      sub: fixture.clientId,
      aud: fixture.issuer,
    })
  })

  it("a token the server stops accepting is renewed on the 401 and the call goes through", async () => {
    const mcp = await connect({
      grant: "client_credentials",
      clientId: fixture.clientId,
      clientSecret: fixture.clientSecret,
    })
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    const before = fixture.tokenRequests.length
    fixture.revokeAll()
    expect(await toolkit.execute("svc__ping", {})).toMatchObject({ isError: false, output: "pong" })
    expect(fixture.tokenRequests.length - before).toBe(1)
    expect(mcp.tools().map((t) => t.name)).toEqual(["svc__ping"]) // never a sign-in tool
  })

  it("a token at its expiry is renewed before it is refused", async () => {
    // The clock is the test's: only `Date` is faked (the client's renewal time and the fixture's
    // token expiry both read it), so the calls land in the renewal window however loaded the
    // machine is, and nothing sleeps.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() })
    try {
      const issued = Date.now()
      const mcp = await connect({
        grant: "client_credentials",
        clientId: fixture.clientId,
        clientSecret: fixture.clientSecret,
      })
      const toolkit = await createToolkit({ extraTools: mcp.tools() })
      const refused = fixture.refused()
      // An hour's token, 40 s before its expiry: not yet in the 30 s renewal margin.
      vi.setSystemTime(issued + 3_600_000 - 40_000)
      let before = fixture.tokenRequests.length
      expect(await toolkit.execute("svc__ping", {})).toMatchObject({ isError: false, output: "pong" })
      expect(fixture.tokenRequests.length - before).toBe(0)
      // 20 s before it: in the margin, so renewed once for both calls, and never refused.
      vi.setSystemTime(issued + 3_600_000 - 20_000)
      before = fixture.tokenRequests.length
      const calls = await Promise.all([toolkit.execute("svc__ping", {}), toolkit.execute("svc__ping", {})])
      for (const call of calls) expect(call).toMatchObject({ isError: false, output: "pong" })
      expect(fixture.tokenRequests.length - before).toBe(1)
      // The old token would be refused now; the renewed one is not.
      vi.setSystemTime(issued + 3_600_000 + 1_000)
      expect(await toolkit.execute("svc__ping", {})).toMatchObject({ isError: false, output: "pong" })
      expect(fixture.refused()).toBe(refused)
    } finally {
      vi.useRealTimers()
    }
  })

  it("a refused grant: the server fails naming the authorization server's error, never the secret", async () => {
    const mcp = await connect({
      grant: "client_credentials",
      clientId: fixture.clientId,
      clientSecret: "not-the-secret",
    })
    const status = mcp.servers()[0]
    expect(status).toMatchObject({ status: "failed", code: "TNX_MCP_CONNECT" })
    expect(status?.error).toMatch(
      /MCP server "svc".*refused the client_credentials grant: invalid_client \(bad secret\)/,
    )
    expect(status?.error).not.toContain("not-the-secret")
    expect(status?.authorizationUrl).toBeUndefined()
  })

  it("a grant refused mid-session is an isError result naming the server and the error", async () => {
    const mcp = await connect({
      grant: "client_credentials",
      clientId: fixture.clientId,
      clientSecret: fixture.clientSecret,
    })
    const toolkit = await createToolkit({ extraTools: mcp.tools() })
    fixture.revokeAll()
    fixture.settings.refuse = { error: "unauthorized_client", description: "the client is disabled" }
    try {
      const result = await toolkit.execute("svc__ping", {})
      expect(result.isError).toBe(true)
      expect(result.metadata?.pending).toBeUndefined()
      expect(result.output).toMatch(/MCP server "svc"/)
      expect(result.output).toMatch(/unauthorized_client \(the client is disabled\)/)
      for (const secret of secrets()) expect(result.output).not.toContain(secret)
    } finally {
      fixture.settings.refuse = undefined
    }
  })
})

describe("cross-app access", () => {
  it("exchanges the ID token at the identity provider, then makes a jwt-bearer grant", async () => {
    const tokens = fixture.tokenRequests.length
    const exchanges = fixture.idpRequests.length
    let asked = 0
    const mcp = await connect({
      grant: "cross_app_access",
      clientId: fixture.clientId,
      clientSecret: fixture.clientSecret,
      idp: {
        tokenEndpoint: fixture.idpTokenEndpoint,
        clientId: "idp-client",
        idToken: async () => {
          asked++
          return fixture.idToken
        },
      },
    })
    expect(mcp.servers()[0]).toMatchObject({ status: "ready", tools: 1 })
    expect(asked).toBe(1)
    expect(fixture.idpRequests.slice(exchanges)[0]?.body).toMatchObject({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      requested_token_type: "urn:ietf:params:oauth:token-type:id-jag",
      subject_token: fixture.idToken,
      subject_token_type: "urn:ietf:params:oauth:token-type:id_token",
      audience: fixture.issuer,
      resource: fixture.url,
      client_id: "idp-client",
    })
    expect(fixture.tokenRequests.slice(tokens)[0]).toMatchObject({
      grant: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      auth: "basic",
    })
  })

  it("an identity provider that refuses the exchange fails the server, saying so", async () => {
    const mcp = await connect({
      grant: "cross_app_access",
      clientId: fixture.clientId,
      clientSecret: fixture.clientSecret,
      idp: { tokenEndpoint: fixture.idpTokenEndpoint, clientId: "idp-client", idToken: "stale-id-token" },
    })
    expect(mcp.servers()[0]?.status).toBe("failed")
    expect(mcp.servers()[0]?.error).toMatch(/identity provider refused the token exchange: invalid_grant/)
    expect(mcp.servers()[0]?.error).not.toContain("stale-id-token")
  })
})

describe("options are checked before anything connects", () => {
  const cases: [string, McpOAuthOptions, RegExp][] = [
    ["no clientId", { grant: "client_credentials", clientSecret: "s" }, /needs a pre-registered "clientId"/],
    [
      "no credential",
      { grant: "client_credentials", clientId: "c" },
      /needs a "clientSecret" or a "privateKey"/,
    ],
    [
      "private_key_jwt without a key",
      {
        grant: "client_credentials",
        clientId: "c",
        clientSecret: "s",
        tokenEndpointAuthMethod: "private_key_jwt",
      },
      /private_key_jwt needs a "privateKey"/,
    ],
    ["no idp", { grant: "cross_app_access", clientId: "c", clientSecret: "s" }, /needs "idp"/],
    ["an unknown grant", { grant: "password" as never, clientId: "c" }, /"grant" must be one of/],
    [
      "an http metadata URL",
      { redirectUrl: "http://localhost/cb", clientMetadataUrl: "http://example.com/client.json" },
      /"clientMetadataUrl" must be an https URL with a path/,
    ],
    ["a login with no redirect", { clientId: "c" }, /"redirectUrl" must be a URL/],
  ]
  for (const [what, oauth, message] of cases) {
    it(what, async () => {
      const attempt = connectMcp({ servers: { svc: { url: fixture.url } }, oauth })
      await expect(attempt).rejects.toBeInstanceOf(ConfigError)
      await expect(attempt).rejects.toThrow(message)
    })
  }

  it("a server's own oauth is merged over the connection's", async () => {
    const mcp = await connectMcp({
      servers: {
        svc: {
          url: fixture.url,
          oauth: {
            grant: "client_credentials",
            clientId: fixture.clientId,
            clientSecret: fixture.clientSecret,
          },
        },
      },
      oauth: { redirectUrl: "http://localhost/cb", scope: "shared" },
    })
    open.push(mcp)
    expect(mcp.servers()[0]?.status).toBe("ready")
    expect(fixture.tokenRequests.at(-1)?.body.scope).toBe("shared")
  })
})
