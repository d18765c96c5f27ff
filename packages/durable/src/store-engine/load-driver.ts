import { createRequire } from "node:module"
import { ConfigError } from "@toolnexus/core"

const requireFromHere = createRequire(import.meta.url)

/**
 * @internal Loads an optional peer dependency when a store first needs it, so importing this
 * package (or a backend's entry) never fails for want of a driver the caller does not use.
 * A missing driver is a `ConfigError` that says what to install.
 */
export function loadDriver<T>(name: string, store: string): T {
  const loaded = preloaded.get(name)
  return (loaded !== undefined ? loaded : requireDriver(name, store)) as T
}

/** Loads a driver not preloaded (a fresh process's first store, preloaded, never compiles this). */
function requireDriver(name: string, store: string): unknown {
  try {
    return requireFromHere(name)
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

const preloaded = new Map<string, unknown>()

/**
 * @internal Loads a driver with the backend's entry module, so that the first store of a fresh
 * process opens without a module load before its first statement (the cold resume's path). A
 * missing or broken driver is not an error here: {@link loadDriver} reports it when a store
 * is made.
 */
export function preloadDriver(name: string): void {
  try {
    preloaded.set(name, requireFromHere(name))
  } catch {
    // Reported by loadDriver, with what to install.
  }
}
