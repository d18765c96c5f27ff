/** What `serveA2A` publishes about the agent; the rest of the card is derived. */
export interface A2ACardInfo {
  /** The agent's name on the card; required (`serveA2A` throws a ConfigError without it). */
  name: string
  /** What the agent does, shown on the card (default `""`). */
  description?: string
  /** The agent's own version (default `"0.1.0"`). */
  version?: string
  /** Overrides the served URL (default: the request's origin + `basePath`). */
  url?: string
  /** What the agent can do, listed on the card as given (default none). */
  skills?: {
    /** The skill's unique id on the card, e.g. `"book-flight"`. */
    id: string
    /** The skill's display name. */
    name: string
    /** What the skill does, for a client picking one. */
    description: string
    /** Keywords for the skill (default none). */
    tags?: string[]
  }[]
  /** Who runs the agent; absent leaves `provider` off the card. */
  provider?: {
    /** The provider's organization name. */
    organization: string
    /** The provider's website URL. */
    url: string
  }
}

const MODES = ["text/plain", "application/json"]

/**
 * @internal The agent card as JSON: A2A 1.0's shape (`supportedInterfaces`) for `version`
 * `"1.0"`, else v0.3's (`url`, `protocolVersion`, `preferredTransport`). A Bearer scheme is
 * declared when the server checks tokens.
 */
export function agentCardJson(
  info: A2ACardInfo,
  url: string,
  version: "1.0" | "0.3",
  bearer: boolean,
): Record<string, unknown> {
  const skills = (info.skills ?? []).map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    tags: s.tags ?? [],
  }))
  const common: Record<string, unknown> = {
    name: info.name,
    description: info.description ?? "",
    version: info.version ?? "0.1.0",
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills,
  }
  if (info.provider) common.provider = info.provider
  if (version === "1.0") {
    const card: Record<string, unknown> = {
      ...common,
      supportedInterfaces: [
        { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
      ],
    }
    if (bearer) {
      card.securitySchemes = { bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } } }
      card.securityRequirements = [{ schemes: { bearer: { list: [] } } }]
    }
    return card
  }
  const card: Record<string, unknown> = {
    ...common,
    protocolVersion: "0.3.0",
    url,
    preferredTransport: "JSONRPC",
  }
  if (bearer) {
    card.securitySchemes = { bearer: { type: "http", scheme: "bearer" } }
    card.security = [{ bearer: [] }]
  }
  return card
}
