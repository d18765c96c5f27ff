import {
  AbortError,
  ConfigError,
  LLMHttpError,
  NetworkError,
  StoreError,
  ToolnexusError,
} from "@toolnexus/core"

/**
 * One line saying what went wrong and what to do about it, instead of a stack trace.
 * `endpoint` is where the model lives ("a scripted model" offline).
 */
export function friendlyError(error: unknown, endpoint: string): string {
  if (NetworkError.isInstance(error)) return `cannot reach the model at ${endpoint}: is the server running?`
  if (LLMHttpError.isInstance(error)) {
    const { status } = error
    if (status === 401 || status === 403)
      return `the API key was refused (${status}): check OPENAI_API_KEY / ANTHROPIC_API_KEY for ${endpoint}`
    if (status === 404)
      return `the model endpoint answered 404: check the base URL and the model name (${endpoint})`
    if (status === 429) return `the model endpoint is rate limiting us (429): wait a moment and try again`
    if (status >= 500) return `the model endpoint failed (${status}): try again later (${endpoint})`
    return `the model endpoint refused the request (${status}): ${error.bodyExcerpt.slice(0, 200)}`
  }
  if (AbortError.isInstance(error)) return "the run was stopped before it finished"
  if (StoreError.isInstance(error))
    return `the store failed: ${error.message} (QUICKSTART_DATA moves the data folder)`
  if (ConfigError.isInstance(error)) return `configuration problem: ${error.message}`
  if (ToolnexusError.isInstance(error)) return `${error.message} (${error.code})`
  return `unexpected error: ${error instanceof Error ? error.message : String(error)} (QUICKSTART_DEBUG=1 shows the stack)`
}
