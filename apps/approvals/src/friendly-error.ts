import { ConfigError, LLMHttpError, LLMResponseError, NetworkError, StoreError } from "@toolnexus/core"

/**
 * One line that says what went wrong and how to fix it, for the log and for API error
 * messages, instead of a stack trace. `modelUrl` is where the model is served, when known.
 */
export function friendlyError(error: unknown, modelUrl?: string): string {
  const at = modelUrl ? ` at ${modelUrl}` : ""
  if (NetworkError.isInstance(error))
    return `cannot reach the model${at}: is the server running? (${firstLine(error)})`
  if (LLMHttpError.isInstance(error)) {
    const { status } = error as LLMHttpError
    if (status === 401 || status === 403) {
      return `the API key was refused (${status}): check OPENAI_API_KEY or ANTHROPIC_API_KEY`
    }
    if (status === 404) return `the model endpoint${at} answered 404: check the base URL and the model name`
    if (status === 429) return `the model endpoint${at} is rate limiting (429): try again in a moment`
    return `the model endpoint${at} failed (HTTP ${status}); the decision is kept, answer again or wait for the sweep`
  }
  if (LLMResponseError.isInstance(error))
    return `the model${at} sent a reply that could not be used: ${firstLine(error)}`
  if (StoreError.isInstance(error)) return `the database failed: ${firstLine(error)}`
  if (ConfigError.isInstance(error)) return `configuration: ${firstLine(error)}`
  const code = (error as { code?: unknown })?.code
  if (code === "EADDRINUSE") {
    const port = (error as { port?: unknown }).port
    return `port ${port ?? ""} is already in use: set PORT (or --port) to a free one, or 0 for any`
  }
  if (code === "EACCES") return "not allowed to listen on that port: use one above 1024"
  return firstLine(error)
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.split("\n", 1)[0] ?? ""
}
