import { createRequire } from "node:module"

const requireFromHere = createRequire(import.meta.url)

/** Where better-sqlite3's build puts its addon, inside the driver's package. */
const ADDON = "better-sqlite3/build/Release/better_sqlite3.node"

/** @internal better-sqlite3's addon as this module found it: loaded, absent, or failing. */
export type NativeBinding = { addon: object } | { error: unknown } | { absent: true }

/**
 * @internal better-sqlite3's native addon, loaded with this module from where the driver's
 * own build puts it, so that a store hands it to `new Database` (`nativeBinding`). Otherwise
 * the first database of every process finds its addon through the `bindings` package, which
 * probes a dozen paths: milliseconds on a cold resume's way to its first LLM request.
 */
export const nativeBinding: NativeBinding = loadNativeBinding()

/**
 * @internal Loads the addon with `load`. Not there: `absent`, and the driver looks for it
 * itself. There but not loadable (say, built for another Node): that `error` is what a store
 * reports, since the driver loading the same file again would only say "Module did not
 * self-register".
 */
export function loadNativeBinding(load: (id: string) => unknown = requireFromHere): NativeBinding {
  try {
    return { addon: load(ADDON) as object }
  } catch (error) {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
    const notThere = code === "MODULE_NOT_FOUND" && typeof message === "string" && message.includes(ADDON)
    return notThere ? { absent: true } : { error }
  }
}
