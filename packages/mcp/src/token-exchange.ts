import { parseErrorResponse } from "@modelcontextprotocol/client"
import type { McpIdpOptions } from "./oauth-options.js"

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
const ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
const ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"

/**
 * @internal The first half of cross-app access (SEP-990): the identity provider exchanges the
 * user's ID token for an identity assertion grant (ID-JAG) addressed to the MCP server's
 * authorization server (`audience`) for the MCP server (`resource`), per RFC 8693. The SDK
 * (1.x) has no helper for this step; the second, the `jwt-bearer` grant, goes through its
 * token request.
 *
 * @throws Error naming the identity provider's error. Not the SDK's OAuthError: that would
 *   read as the authorization server's, and make the SDK retry the grant with the same token.
 */
export async function exchangeForIdJag(
  idp: McpIdpOptions,
  audience: string,
  resource: string,
  scope: string | undefined,
): Promise<string> {
  const idToken = typeof idp.idToken === "function" ? await idp.idToken() : idp.idToken
  const body = new URLSearchParams({
    grant_type: TOKEN_EXCHANGE,
    requested_token_type: ID_JAG,
    audience,
    resource,
    subject_token: idToken,
    subject_token_type: ID_TOKEN,
  })
  if (scope) body.set("scope", scope)
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  }
  if (idp.clientSecret === undefined) body.set("client_id", idp.clientId)
  else {
    const pair = `${encodeURIComponent(idp.clientId)}:${encodeURIComponent(idp.clientSecret)}`
    headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`
  }
  const response = await fetch(idp.tokenEndpoint, { method: "POST", headers, body })
  if (!response.ok) {
    const refusal = await parseErrorResponse(response)
    const detail = refusal.message ? ` (${refusal.message})` : ""
    throw new Error(`the identity provider refused the token exchange: ${refusal.code ?? "error"}${detail}`)
  }
  const result = (await response.json()) as { access_token?: unknown; issued_token_type?: unknown }
  if (typeof result.access_token !== "string" || result.access_token === "")
    throw new Error("the identity provider's token exchange answered without an access_token")
  if (result.issued_token_type !== undefined && result.issued_token_type !== ID_JAG) {
    throw new Error(
      `the identity provider issued ${String(result.issued_token_type)} instead of an identity assertion grant`,
    )
  }
  return result.access_token
}
