import { SchemaVersionError } from "@toolnexus/core"

/**
 * @internal Throws `SchemaVersionError` when the stored schema version is not one this code
 * can migrate from (newer than it knows, or not a version at all). `known` is the number of
 * migrations, which is the newest version.
 */
export function checkSchemaVersion(found: unknown, known: number, what: string): number {
  const version = typeof found === "string" && /^\d+$/.test(found) ? Number(found) : found
  if (typeof version !== "number" || !Number.isSafeInteger(version) || version < 0 || version > known) {
    const supported = Array.from({ length: known }, (_, i) => i + 1)
    throw new SchemaVersionError(what, found, supported)
  }
  return version
}
