import { describe, expect, it } from "vitest"
import { TokenStoreAuthProvider } from "./oauth-provider.js"
import { memoryTokenStore } from "./token-store.js"

const SERVER_URL = "https://mcp.example.com/mcp"
const DOCUMENT = "https://app.example.com/oauth/client.json"

function provider(options: ConstructorParameters<typeof TokenStoreAuthProvider>[3]) {
  return new TokenStoreAuthProvider("svc", SERVER_URL, memoryTokenStore(), options)
}

async function discovered(p: TokenStoreAuthProvider, cimd: boolean): Promise<void> {
  await p.saveDiscoveryState({
    authorizationServerUrl: "https://auth.example.com",
    authorizationServerMetadata: {
      issuer: "https://auth.example.com",
      authorization_endpoint: "https://auth.example.com/authorize",
      token_endpoint: "https://auth.example.com/token",
      response_types_supported: ["code"],
      client_id_metadata_document_supported: cimd,
    },
  })
}

describe("which client a login uses", () => {
  it("the metadata document URL when the authorization server takes one, even with a clientId", async () => {
    const p = provider({
      redirectUrl: "https://app.example.com/cb",
      clientMetadataUrl: DOCUMENT,
      clientId: "pre",
    })
    expect(p.clientMetadataUrl).toBe(DOCUMENT)
    await discovered(p, true)
    // Nothing stored: the SDK then uses clientMetadataUrl as the client_id.
    expect(await p.clientInformation()).toBeUndefined()
  })

  it("else the pre-registered clientId", async () => {
    const p = provider({
      redirectUrl: "https://app.example.com/cb",
      clientMetadataUrl: DOCUMENT,
      clientId: "pre",
    })
    await discovered(p, false)
    expect(await p.clientInformation()).toEqual({ client_id: "pre" })
  })

  it("else nothing, so the SDK registers the client dynamically", async () => {
    const p = provider({ redirectUrl: "https://app.example.com/cb" })
    await discovered(p, false)
    expect(await p.clientInformation()).toBeUndefined()
    expect(p.redirectUrl).toBe("https://app.example.com/cb")
  })
})

describe("machine grants", () => {
  it("have no redirect URL (the SDK fetches tokens instead of starting a login) nor a metadata URL", async () => {
    const p = provider({
      grant: "client_credentials",
      clientId: "c",
      clientSecret: "s",
      clientMetadataUrl: DOCUMENT,
    })
    expect(p.redirectUrl).toBeUndefined()
    expect(p.clientMetadataUrl).toBeUndefined()
    expect(p.isMachine).toBe(true)
    expect(String(await p.prepareTokenRequest("a b"))).toBe("grant_type=client_credentials&scope=a+b")
  })

  it("a login's provider makes no token request of its own (the SDK exchanges the code)", async () => {
    expect(
      await provider({ redirectUrl: "https://app.example.com/cb" }).prepareTokenRequest(),
    ).toBeUndefined()
  })

  it("private_key_jwt: a client assertion, and the secret is never offered", async () => {
    const p = provider({ grant: "client_credentials", clientId: "c", clientSecret: "s", privateKey: "pem" })
    expect(p.addClientAuthentication).toBeTypeOf("function")
    expect(await p.clientInformation()).toEqual({ client_id: "c" })
  })

  it("client_secret_post is passed to the SDK's method choice", async () => {
    const p = provider({
      grant: "client_credentials",
      clientId: "c",
      clientSecret: "s",
      tokenEndpointAuthMethod: "client_secret_post",
    })
    expect(p.addClientAuthentication).toBeUndefined()
    expect(await p.clientInformation()).toEqual({
      client_id: "c",
      client_secret: "s",
      token_endpoint_auth_method: "client_secret_post",
    })
  })
})

describe("the discovery the SDK is handed (SEP-2352)", () => {
  it("is the saved one only while a login is in progress, so a moved authorization server is found again", async () => {
    const p = provider({ redirectUrl: "https://app.example.com/cb" })
    await discovered(p, false)
    // No login started: the SDK discovers afresh and follows the server's current authorization server.
    expect(await p.discoveryState()).toBeUndefined()
    await p.state()
    await p.saveCodeVerifier("verifier")
    await p.redirectToAuthorization(new URL("https://auth.example.com/authorize?x=1"))
    // The code of the login in progress must be redeemed where it was issued.
    expect((await p.discoveryState())?.authorizationServerUrl).toBe("https://auth.example.com")
  })
})
