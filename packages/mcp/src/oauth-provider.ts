import { randomBytes } from "node:crypto"
import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js"
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js"
import { isPlainObject } from "./config.js"
import type { TokenStore } from "./token-store.js"

/** OAuth settings for remote servers that answer 401. */
export interface McpOAuthOptions {
  /** Where the authorization server sends the user back with `?code=…&state=…`: the host's route. */
  redirectUrl: string
  /** Shown on the authorization server's consent page. Default `"toolnexus"`. */
  clientName?: string
  scope?: string
  /**
   * A client registered beforehand with the authorization server, for servers without dynamic
   * client registration. Without it the client registers itself (and the registration is kept
   * in the token store).
   */
  clientId?: string
  clientSecret?: string
}

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
}

/** A started login is reused for this long; after that a new one begins. */
const STARTED_TTL_MS = 15 * 60_000

/**
 * @internal The SDK's auth provider, backed by the host's {@link TokenStore}. The SDK calls it
 * to read and save tokens and client registration, and hands it the login URL on a 401; the
 * URL is kept here for the tool to suspend with, never opened.
 */
export class TokenStoreAuthProvider implements OAuthClientProvider {
  readonly #server: string
  readonly #store: TokenStore
  readonly #options: McpOAuthOptions
  #state: string | undefined
  #verifier: string | undefined
  /** The login URL the last 401 asked for, until the tool reads it. */
  authorizationUrl: string | undefined

  constructor(server: string, store: TokenStore, options: McpOAuthOptions) {
    this.#server = server
    this.#store = store
    this.#options = options
  }

  get redirectUrl(): string {
    return this.#options.redirectUrl
  }

  get clientMetadata(): OAuthClientMetadata {
    const metadata: OAuthClientMetadata = {
      client_name: this.#options.clientName ?? "toolnexus",
      redirect_uris: [this.#options.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    }
    if (this.#options.scope !== undefined) metadata.scope = this.#options.scope
    return metadata
  }

  async state(): Promise<string> {
    const started = await this.#started()
    this.#state = started?.state ?? randomBytes(16).toString("base64url")
    return this.#state
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const registered = (await this.#record()).client
    if (registered) return registered
    const { clientId, clientSecret } = this.#options
    if (clientId === undefined) return undefined
    return clientSecret === undefined
      ? { client_id: clientId }
      : { client_id: clientId, client_secret: clientSecret }
  }

  async saveClientInformation(client: OAuthClientInformationMixed): Promise<void> {
    await this.#update((r) => {
      r.client = client
    })
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    return (await this.#record()).tokens
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    await this.#update((r) => {
      r.tokens = tokens
      r.started = undefined
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

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    return (await this.#record()).discovery
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
