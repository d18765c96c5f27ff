import { createRequire } from "node:module"

const requireFromHere = createRequire(import.meta.url)

/**
 * @internal better-sqlite3's native addon, loaded with this module from where the driver's
 * own build puts it, so that a store hands it to `new Database` (`nativeBinding`). Otherwise
 * the first database of every process finds its addon through the `bindings` package, which
 * probes a dozen paths: milliseconds on a cold resume's way to its first LLM request.
 * `undefined` when the driver is missing or its addon is elsewhere; the driver then looks
 * for it itself, and reports what it finds wrong.
 */
export const nativeBinding: object | undefined = loadNativeBinding()

/** @internal The addon as `load` finds it at the driver's build path; `undefined` when it fails. */
export function loadNativeBinding(load: (id: string) => unknown = requireFromHere): object | undefined {
  try {
    return load("better-sqlite3/build/Release/better_sqlite3.node") as object
  } catch {
    return undefined
  }
}
