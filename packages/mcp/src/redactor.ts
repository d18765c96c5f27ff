import { type McpServerConfig, isHttpConfig } from "./config.js"

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g
/** Values shorter than this are too common to scrub from text without mangling it. */
const MIN_SECRET = 4

/**
 * @internal Keeps a server's secrets out of messages: header values (with `${NAME}` read from
 * the environment) and the `env` values given to a child process are replaced by `***` in any
 * text that leaves the package (errors, tool results, stderr excerpts), and so are the OAuth
 * client secrets, private keys and ID tokens the connection was given.
 */
export class Redactor {
  readonly #secrets: string[]
  readonly #headers: Record<string, string> | undefined

  /** @param extra - more secrets to keep out (OAuth client secrets and keys). */
  constructor(config: McpServerConfig, extra: readonly string[] = []) {
    const secrets: string[] = [...extra]
    if (isHttpConfig(config) && config.headers) {
      this.#headers = {}
      for (const [name, raw] of Object.entries(config.headers)) {
        const value = raw.replace(PLACEHOLDER, (_, env: string) => process.env[env] ?? "")
        this.#headers[name] = value
        secrets.push(value, ...value.split(/\s+/))
      }
    } else if (!isHttpConfig(config) && config.env) {
      secrets.push(...Object.values(config.env))
    }
    // Longest first, so a value containing another is replaced whole.
    this.#secrets = [...new Set(secrets.filter((s) => s.length >= MIN_SECRET))].sort(
      (a, b) => b.length - a.length,
    )
  }

  /** The headers to send, with `${NAME}` filled in. */
  headers(): Record<string, string> | undefined {
    return this.#headers
  }

  clean(text: string): string {
    if (this.#secrets.length === 0) return text
    let out = text
    for (const secret of this.#secrets) out = out.split(secret).join("***")
    return out
  }
}
