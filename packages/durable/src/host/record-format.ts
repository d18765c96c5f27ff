import { SchemaVersionError } from "@toolnexus/core"

/** @internal The format version a store host's records (run, grants, deliveries) are written with. */
export const RECORD_FORMAT = 1

/**
 * @internal `value` read from the store as a record of one of the `formats` (default
 * {@link RECORD_FORMAT} alone): one written before the version was kept (no `v`) reads as v1.
 *
 * @throws SchemaVersionError naming `what` for another version (a newer host wrote it): refused, never misread.
 */
export function checkedRecord<T extends object>(
  what: string,
  value: unknown,
  formats: readonly number[] = [RECORD_FORMAT],
): T | undefined {
  if (value === undefined || value === null) return undefined
  const v = (value as { v?: unknown }).v
  if (v !== undefined && !formats.includes(v as number)) throw new SchemaVersionError(what, v, [...formats])
  return value as T
}
