import { createRequire } from "node:module"
import { ConfigError } from "@toolnexus/core"

const requireFromHere = createRequire(import.meta.url)

/**
 * @internal Loads an optional peer dependency when a store first needs it, so importing this
 * package (or a backend's entry) never fails for want of a driver the caller does not use.
 * A missing driver is a `ConfigError` that says what to install.
 */
export function loadDriver<T>(name: string, store: string): T {
  try {
    return requireFromHere(name) as T
  } catch (cause) {
    const code = (cause as { code?: unknown } | null)?.code
    const message = cause instanceof Error ? cause.message : ""
    if (code === "MODULE_NOT_FOUND" && message.includes(`'${name}'`)) {
      throw new ConfigError(
        `${store} needs the optional peer dependency "${name}", which is not installed: ` +
          `run \`npm install ${name}\``,
        { cause },
      )
    }
    throw new ConfigError(`${store} could not load its driver "${name}": ${message}`, { cause })
  }
}
