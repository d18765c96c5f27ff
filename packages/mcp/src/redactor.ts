import { createSecretRedactor, headerSecretValues } from "@toolnexus/core"
import { type McpServerConfig, isHttpConfig } from "./config.js"

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/**
 * @internal Keeps a server's secrets out of messages: header values (with `${NAME}` read from
 * the environment) and the `env` values given to a child process are replaced by `***` in any
 * text that leaves the package (errors, tool results, stderr excerpts), and so are the OAuth
 * client secrets, private keys and ID tokens the connection was given.
 */
export class Redactor {
  readonly #clean: (text: string) => string
  readonly #headers: Record<string, string> | undefined

  /** @param extra - more secrets to keep out (OAuth client secrets and keys). */
  constructor(config: McpServerConfig, extra: readonly string[] = []) {
    const secrets: string[] = [...extra]
    if (isHttpConfig(config) && config.headers) {
      this.#headers = {}
      for (const [name, raw] of Object.entries(config.headers))
        this.#headers[name] = raw.replace(PLACEHOLDER, (_, env: string) => process.env[env] ?? "")
      secrets.push(...headerSecretValues(this.#headers))
    } else if (!isHttpConfig(config) && config.env) {
      secrets.push(...Object.values(config.env))
    }
    this.#clean = createSecretRedactor(secrets, { marker: "***" })
  }

  /** The headers to send, with `${NAME}` filled in. */
  headers(): Record<string, string> | undefined {
    return this.#headers
  }

  clean(text: string): string {
    return this.#clean(text)
  }
}
