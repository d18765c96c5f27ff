import { ToolnexusError } from "@toolnexus/core"

/** Environment variables whose values are API keys: never streamed, whatever `onError` returns. */
const KEY_VARIABLES = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"]

/** @internal `<code>: <message>` for a toolnexus error, else a fixed text that says nothing inside. */
export function defaultErrorText(error: unknown): string {
  if (ToolnexusError.isInstance(error)) return `${error.code}: ${error.message}`
  return "TNX_INTERNAL: internal error"
}

/**
 * @internal The text an `error` chunk / `RUN_ERROR` carries: `onError(error)` (or the
 * default), with the key environment variables' values cut out. A throwing `onError` falls
 * back to the default text rather than losing the error.
 */
export function errorTextOf(error: unknown, onError: ((e: unknown) => string) | undefined): string {
  let text: string
  try {
    text = onError ? String(onError(error)) : defaultErrorText(error)
  } catch {
    text = defaultErrorText(error)
  }
  return redactKeys(text)
}

/** @internal Replaces every value of a key environment variable in `text` with `[redacted]`. */
export function redactKeys(text: string): string {
  let out = text
  for (const name of KEY_VARIABLES) {
    const value = process.env[name]
    // Very short values would redact ordinary words; no real key is that short.
    if (value && value.length >= 8) out = out.split(value).join("[redacted]")
  }
  return out
}
