import { SchemaVersionError } from "@toolnexus/core"

/** @internal The format version a store host's records (run, grants, deliveries) are written with. */
export const RECORD_FORMAT = 1

/**
 * @internal `value` read from the store as a record of format {@link RECORD_FORMAT}: one
 * written before the version was kept (no `v`) reads as v1.
 *
 * @throws SchemaVersionError naming `what` for another version (a newer host wrote it): refused, never misread.
 */
export function checkedRecord<T extends object>(what: string, value: unknown): T | undefined {
  if (value === undefined || value === null) return undefined
  const v = (value as { v?: unknown }).v
  if (v !== undefined && v !== RECORD_FORMAT) throw new SchemaVersionError(what, v, [RECORD_FORMAT])
  return value as T
}
