import { ConfigError } from "@toolnexus/core"

/** How a client authenticates itself at the authorization server's token endpoint. */
export type McpTokenEndpointAuthMethod = "client_secret_basic" | "client_secret_post" | "private_key_jwt"

/**
 * Cross-app access (SEP-990, "enterprise-managed authorization"): the user's identity
 * provider exchanges their ID token for an identity assertion grant (RFC 8693 token exchange),
 * which the MCP server's authorization server takes as a `jwt-bearer` grant (RFC 7523).
 */
export interface McpIdpOptions {
  /** The identity provider's token endpoint, where the token exchange is made. */
  tokenEndpoint: string
  /** This application's client ID at the identity provider. */
  clientId: string
  /** Its secret there, when the identity provider wants one (sent as `client_secret_basic`). */
  clientSecret?: string
  /** The user's ID token from the identity provider, or a function that returns a fresh one. */
  idToken: string | (() => string | Promise<string>)
}

/** OAuth settings for remote servers that answer 401. */
export interface McpOAuthOptions {
  /**
   * How tokens are obtained. `"authorization_code"` (the default): a user signs in, which
   * suspends the call with `kind: "authorization"`. `"client_credentials"`: the application
   * itself, with its own credentials (machine to machine). `"cross_app_access"`: for the user
   * signed in to the identity provider of {@link McpOAuthOptions.idp}, with no login page.
   * The last two never suspend.
   */
  grant?: "authorization_code" | "client_credentials" | "cross_app_access"
  /**
   * Where the authorization server sends the user back with `?code=…&state=…`: the host's
   * route. Required for the `authorization_code` grant, unused by the others.
   */
  redirectUrl?: string
  /** Shown on the authorization server's consent page. Default `"toolnexus"`. */
  clientName?: string
  /** The scope asked for when the server does not say which it wants. */
  scope?: string
  /**
   * An HTTPS URL serving this client's metadata document (SEP-991). Used as the client ID when
   * the authorization server advertises `client_id_metadata_document_supported`; otherwise
   * `clientId`, else dynamic registration.
   */
  clientMetadataUrl?: string
  /**
   * A client registered beforehand with the authorization server. Required for the
   * `client_credentials` and `cross_app_access` grants; for `authorization_code`, used when the
   * authorization server takes no client metadata document (else the client registers itself,
   * and the registration is kept in the token store).
   */
  clientId?: string
  /** The registered client's secret (`client_secret_basic` or `client_secret_post`). */
  clientSecret?: string
  /**
   * How the client authenticates at the token endpoint. Default: `private_key_jwt` with a
   * `privateKey`, else the best of `client_secret_basic` / `client_secret_post` the
   * authorization server supports.
   */
  tokenEndpointAuthMethod?: McpTokenEndpointAuthMethod
  /** For `private_key_jwt`: a PKCS#8 PEM private key, or a JWK object. */
  privateKey?: string | Record<string, unknown>
  /** For `private_key_jwt`: the JWS algorithm of the client assertion. Default `"RS256"`. */
  signingAlgorithm?: string
  /** Required for the `cross_app_access` grant. */
  idp?: McpIdpOptions
}

const GRANTS = ["authorization_code", "client_credentials", "cross_app_access"]
const METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]

/**
 * @internal Checks OAuth options (the connection's, or a server's merged over them) before
 * anything connects, so a missing credential is a ConfigError and not a refused grant later.
 */
export function checkOAuthOptions(options: unknown, at: string): McpOAuthOptions {
  if (!isPlainObject(options)) throw new ConfigError(`${at} must be an object`)
  const o = options as McpOAuthOptions
  const grant = o.grant ?? "authorization_code"
  if (!GRANTS.includes(grant)) {
    throw new ConfigError(
      `${at}: "grant" must be one of ${GRANTS.join(", ")}, got ${JSON.stringify(o.grant)}`,
    )
  }
  for (const key of [
    "redirectUrl",
    "clientName",
    "scope",
    "clientId",
    "clientSecret",
    "signingAlgorithm",
  ] as const) {
    if (o[key] !== undefined && typeof o[key] !== "string")
      throw new ConfigError(`${at}: "${key}" must be a string`)
  }
  if (grant === "authorization_code" && typeof o.redirectUrl !== "string")
    throw new ConfigError(`${at}: "redirectUrl" must be a URL (the authorization_code grant needs one)`)
  if (o.clientMetadataUrl !== undefined && !isHttpsDocumentUrl(o.clientMetadataUrl)) {
    throw new ConfigError(
      `${at}: "clientMetadataUrl" must be an https URL with a path, got ${JSON.stringify(o.clientMetadataUrl)}`,
    )
  }
  const method = o.tokenEndpointAuthMethod
  if (method !== undefined && !METHODS.includes(method)) {
    throw new ConfigError(
      `${at}: "tokenEndpointAuthMethod" must be one of ${METHODS.join(", ")}, got ${JSON.stringify(method)}`,
    )
  }
  if (o.privateKey !== undefined && typeof o.privateKey !== "string" && !isPlainObject(o.privateKey))
    throw new ConfigError(`${at}: "privateKey" must be a PEM string or a JWK object`)
  if (method === "private_key_jwt" && o.privateKey === undefined)
    throw new ConfigError(`${at}: "tokenEndpointAuthMethod" private_key_jwt needs a "privateKey"`)
  if ((method === "client_secret_basic" || method === "client_secret_post") && o.clientSecret === undefined)
    throw new ConfigError(`${at}: "tokenEndpointAuthMethod" ${method} needs a "clientSecret"`)
  if (grant === "authorization_code") return o
  if (typeof o.clientId !== "string" || o.clientId === "")
    throw new ConfigError(`${at}: the ${grant} grant needs a pre-registered "clientId"`)
  if (grant === "client_credentials" && o.clientSecret === undefined && o.privateKey === undefined)
    throw new ConfigError(`${at}: the client_credentials grant needs a "clientSecret" or a "privateKey"`)
  if (grant === "cross_app_access") {
    const idp = o.idp
    if (!isPlainObject(idp)) throw new ConfigError(`${at}: the cross_app_access grant needs "idp"`)
    if (typeof idp.tokenEndpoint !== "string" || !URL.canParse(idp.tokenEndpoint))
      throw new ConfigError(`${at}: "idp.tokenEndpoint" must be a URL`)
    if (typeof idp.clientId !== "string" || idp.clientId === "")
      throw new ConfigError(`${at}: "idp.clientId" must be a non-empty string`)
    if (typeof idp.idToken !== "string" && typeof idp.idToken !== "function")
      throw new ConfigError(`${at}: "idp.idToken" must be a string or a function returning one`)
  }
  return o
}

/** @internal True for the grants an application runs on its own, with nobody to sign in. */
export function isMachineGrant(options: McpOAuthOptions): boolean {
  return options.grant === "client_credentials" || options.grant === "cross_app_access"
}

/** @internal The values that must never appear in a message: secrets and keys. */
export function oauthSecrets(options: McpOAuthOptions): string[] {
  const secrets: string[] = []
  if (options.clientSecret) secrets.push(options.clientSecret)
  if (typeof options.privateKey === "string") secrets.push(options.privateKey)
  else if (isPlainObject(options.privateKey) && typeof options.privateKey.d === "string")
    secrets.push(options.privateKey.d)
  if (options.idp?.clientSecret) secrets.push(options.idp.clientSecret)
  if (typeof options.idp?.idToken === "string") secrets.push(options.idp.idToken)
  return secrets
}

function isHttpsDocumentUrl(value: unknown): boolean {
  if (typeof value !== "string" || !URL.canParse(value)) return false
  const url = new URL(value)
  return url.protocol === "https:" && url.pathname !== "/"
}

// Not config.ts's: config.ts names this module's type, and a cycle between them is avoided.
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}
