import { StoreError, ToolnexusError } from "@toolnexus/core"

/**
 * @internal Turns a driver or server failure into a `StoreError` that says what was being
 * done and keeps the original as `cause`; toolnexus errors pass through untouched.
 */
export function toStoreError(error: unknown, what: string): Error {
  if (ToolnexusError.isInstance(error)) return error
  const detail = error instanceof Error ? error.message || error.name : String(error)
  return new StoreError(`${what}: ${detail}`, { cause: error })
}

/** @internal The error every call on a closed store fails with. */
export function closedStoreError(store: string): StoreError {
  return new StoreError(`the ${store} is closed`)
}
