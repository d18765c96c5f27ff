import { randomBytes } from "node:crypto"
import {
  type AddClientAuthentication,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
  auth,
  createPrivateKeyJwtAuth,
} from "@modelcontextprotocol/client"
import { isPlainObject } from "./config.js"
import { type McpOAuthOptions, isMachineGrant } from "./oauth-options.js"
import { exchangeForIdJag } from "./token-exchange.js"
import type { TokenStore } from "./token-store.js"

/** An authorization in progress: kept so that a restart (or a second attempt) reuses its URL. */
interface Started {
  url: string
  state: string
  verifier: string
  at: number
}

interface AuthRecord {
  tokens?: OAuthTokens
  client?: OAuthClientInformationMixed
  discovery?: OAuthDiscoveryState
  started?: Started
  /** When the access token of a machine grant is renewed, ahead of its expiry (ms since the epoch). */
  renewAt?: number
}

/** A started login is reused for this long; after that a new one begins. */
const STARTED_TTL_MS = 15 * 60_000
/** A machine grant's token is renewed this long (at most half its life) before it expires. */
const EXPIRY_MARGIN_MS = 30_000
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"

/**
 * @internal The SDK's auth provider, backed by the host's {@link TokenStore}. The SDK calls it
 * to read and save tokens and client registration, and hands it the login URL on a 401; the
 * URL is kept here for the tool to suspend with, never opened.
 *
 * With a machine grant (`client_credentials`, `cross_app_access`) it has no redirect URL,
 * which makes the SDK fetch tokens directly (through {@link prepareTokenRequest}) on a 401
 * instead of starting a login.
 */
export class TokenStoreAuthProvider implements OAuthClientProvider {
  readonly #server: string
  readonly #serverUrl: string
  readonly #store: TokenStore
  readonly #options: McpOAuthOptions
  readonly #machine: boolean
  #state: string | undefined
  #verifier: string | undefined
  #renewal: Promise<void> | undefined
  /** Set while a renewal runs: the SDK's own reads of the tokens then see the stored ones. */
  #renewing = false
  /** The login URL the last 401 asked for, until the tool reads it. */
  authorizationUrl: string | undefined
  /** Set for `private_key_jwt`: the SDK then signs a client assertion instead of sending a secret. */
  readonly addClientAuthentication: AddClientAuthentication | undefined

  constructor(server: string, serverUrl: string, store: TokenStore, options: McpOAuthOptions) {
    this.#server = server
    this.#serverUrl = serverUrl
    this.#store = store
    this.#options = options
    this.#machine = isMachineGrant(options)
    const { clientId, privateKey } = options
    if (this.#usesPrivateKeyJwt() && clientId !== undefined && privateKey !== undefined) {
      this.addClientAuthentication = createPrivateKeyJwtAuth({
        issuer: clientId,
        subject: clientId,
        privateKey,
        alg: options.signingAlgorithm ?? "RS256",
      })
    }
  }

  /** True for a grant the application runs itself: no login, no sign-in tool. */
  get isMachine(): boolean {
    return this.#machine
  }

  get redirectUrl(): string | undefined {
    return this.#machine ? undefined : this.#options.redirectUrl
  }

  /** SEP-991: the SDK uses it as the client ID when the authorization server supports that. */
  get clientMetadataUrl(): string | undefined {
    return this.#machine ? undefined : this.#options.clientMetadataUrl
  }

  get clientMetadata(): OAuthClientMetadata {
    const o = this.#options
    const metadata: OAuthClientMetadata = this.#machine
      ? {
          client_name: o.clientName ?? "toolnexus",
          redirect_uris: [],
          grant_types: [o.grant === "cross_app_access" ? JWT_BEARER : "client_credentials"],
          token_endpoint_auth_method: this.#authMethod(),
        }
      : {
          client_name: o.clientName ?? "toolnexus",
          redirect_uris: [o.redirectUrl ?? ""],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none",
        }
    if (o.scope !== undefined) metadata.scope = o.scope
    return metadata
  }

  /**
   * The token request of a machine grant (the SDK's `fetchToken` calls it): `client_credentials`,
   * or for cross-app access the identity provider's token exchange and then a `jwt-bearer`
   * grant with the assertion it issued. Undefined for logins (the SDK then exchanges the code).
   */
  async prepareTokenRequest(scope?: string): Promise<URLSearchParams | undefined> {
    const o = this.#options
    if (!this.#machine) return undefined
    let params: URLSearchParams
    if (o.grant === "cross_app_access" && o.idp) {
      // Discovery ran (and was saved) before the SDK asks for the token request.
      const discovery = (await this.#record()).discovery
      const audience = String(
        discovery?.authorizationServerMetadata?.issuer ?? discovery?.authorizationServerUrl ?? "",
      )
      const resource = String(discovery?.resourceMetadata?.resource ?? this.#serverUrl)
      const assertion = await exchangeForIdJag(o.idp, audience, resource, scope)
      params = new URLSearchParams({ grant_type: JWT_BEARER, assertion })
    } else params = new URLSearchParams({ grant_type: "client_credentials" })
    if (scope) params.set("scope", scope)
    return params
  }

  async state(): Promise<string> {
    const started = await this.#started()
    this.#state = started?.state ?? randomBytes(16).toString("base64url")
    return this.#state
  }

  /**
   * The client: for a machine grant always the configured one. For a login, a registration kept
   * earlier (dynamic, or the metadata document URL), else the pre-registered `clientId` — unless
   * the authorization server takes a client metadata document and one is configured: then
   * nothing, so the SDK uses the document's URL (SEP-991).
   */
  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const record = await this.#record()
    if (!this.#machine && record.client) return record.client
    const { clientId, clientSecret, clientMetadataUrl } = this.#options
    if (clientId === undefined) return undefined
    if (
      !this.#machine &&
      clientMetadataUrl !== undefined &&
      record.discovery?.authorizationServerMetadata?.client_id_metadata_document_supported === true
    )
      return undefined
    const client: OAuthClientInformationMixed = { client_id: clientId }
    if (clientSecret !== undefined && !this.#usesPrivateKeyJwt()) client.client_secret = clientSecret
    const method = this.#options.tokenEndpointAuthMethod
    if (method === "client_secret_basic" || method === "client_secret_post")
      (client as { token_endpoint_auth_method?: string }).token_endpoint_auth_method = method
    return client
  }

  async saveClientInformation(client: OAuthClientInformationMixed): Promise<void> {
    // A machine grant's client is the configuration; the SDK only stamps it with the issuer.
    if (this.#machine) return
    await this.#update((r) => {
      r.client = client
    })
  }

  /**
   * The stored tokens. A machine grant's token near its expiry is renewed first (the grant is
   * made again through the SDK, once however many requests ask), so no request is refused for
   * it; a refused renewal throws, and the call that needed it fails with the reason.
   */
  async tokens(): Promise<OAuthTokens | undefined> {
    const record = await this.#record()
    if (!this.#machine || record.renewAt === undefined || Date.now() < record.renewAt || this.#renewing)
      return record.tokens
    this.#renewal ??= this.#renew().finally(() => {
      this.#renewal = undefined
    })
    await this.#renewal
    return (await this.#record()).tokens
  }

  async #renew(): Promise<void> {
    this.#renewing = true
    try {
      await auth(this, { serverUrl: this.#serverUrl })
    } finally {
      this.#renewing = false
    }
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    await this.#update((r) => {
      r.tokens = tokens
      r.started = undefined
      const lifetime = typeof tokens.expires_in === "number" ? tokens.expires_in * 1000 : undefined
      r.renewAt =
        this.#machine && lifetime !== undefined
          ? Date.now() + lifetime - Math.min(EXPIRY_MARGIN_MS, lifetime / 2)
          : undefined
    })
  }

  async saveCodeVerifier(verifier: string): Promise<void> {
    this.#verifier = verifier
  }

  async codeVerifier(): Promise<string> {
    const started = (await this.#record()).started
    if (!started) throw new Error("no authorization is in progress for this server")
    return started.verifier
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    // An unexpired login already handed out keeps its URL: the user may be on that page now,
    // and a new verifier would make its code useless.
    const started = await this.#started()
    if (started) {
      this.authorizationUrl = started.url
      return
    }
    const next: Started = {
      url: url.href,
      state: this.#state ?? "",
      verifier: this.#verifier ?? "",
      at: Date.now(),
    }
    await this.#update((r) => {
      r.started = next
    })
    this.authorizationUrl = next.url
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.#update((r) => {
      r.discovery = state
    })
  }

  /**
   * The discovery saved for the login in progress (its code must be redeemed at the
   * authorization server that issued it). Otherwise none: the SDK discovers afresh, so a
   * server that moved to another authorization server is followed there (SEP-2352).
   */
  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    const record = await this.#record()
    return record.started ? record.discovery : undefined
  }

  async invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): Promise<void> {
    await this.#update((r) => {
      if (scope === "all" || scope === "tokens") r.tokens = undefined
      if (scope === "all" || scope === "client") r.client = undefined
      if (scope === "all" || scope === "verifier") r.started = undefined
      if (scope === "all" || scope === "discovery") r.discovery = undefined
    })
  }

  /** @internal The `state` the login in progress was started with, to check the callback's. */
  async expectedState(): Promise<string | undefined> {
    return (await this.#record()).started?.state
  }

  #usesPrivateKeyJwt(): boolean {
    const method = this.#options.tokenEndpointAuthMethod
    return method === "private_key_jwt" || (method === undefined && this.#options.privateKey !== undefined)
  }

  #authMethod(): string {
    if (this.#usesPrivateKeyJwt()) return "private_key_jwt"
    return this.#options.tokenEndpointAuthMethod ?? "client_secret_basic"
  }

  async #started(): Promise<Started | undefined> {
    const started = (await this.#record()).started
    return started && Date.now() - started.at < STARTED_TTL_MS ? started : undefined
  }

  async #record(): Promise<AuthRecord> {
    const value = await this.#store.get(this.#server)
    return isPlainObject(value) ? { ...(value as AuthRecord) } : {}
  }

  async #update(change: (record: AuthRecord) => void): Promise<void> {
    const record = await this.#record()
    change(record)
    for (const key of Object.keys(record) as (keyof AuthRecord)[])
      if (record[key] === undefined) delete record[key]
    await this.#store.set(this.#server, record)
  }
}
