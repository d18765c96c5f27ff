/** The mark {@link markResultAtPark} sets (a registered symbol: one across copies of core). */
const RESULT_AT_PARK = Symbol.for("toolnexus.host.resultAtPark")

/**
 * Marks `host` as one whose `result(runId)` settles once the run parks (its pending result),
 * not only when the run ends: a door waiting on a run's next state then needs no watch of its
 * requests beside that wait. A store host is one; an engine host, whose parked runs wait inside
 * the engine, is not. A host made otherwise (a wrapper, a proxy) is not marked, and is watched.
 *
 * @param host - The host to mark (a non-enumerable property is added).
 * @returns `host`.
 */
export function markResultAtPark<T extends object>(host: T): T {
  Object.defineProperty(host, RESULT_AT_PARK, { value: true })
  return host
}

/**
 * Whether `host` was marked by {@link markResultAtPark}.
 *
 * @param host - Any host.
 * @returns true when its `result` settles at a park.
 */
export function settlesResultAtPark(host: object): boolean {
  return (host as Record<symbol, unknown>)[RESULT_AT_PARK] === true
}
