/**
 * The `pending` column of a SQLite conversation row stores the request without its `id` and
 * `kind`: both are already in their own columns (`pending_id`, `pending_kind`, which the
 * indexes need), and repeating them cost ~65 B of every parked run. Only the exact prefix
 * `JSON.stringify` writes for a request whose first keys are `id` and `kind` is dropped, so
 * packing is a string slice and unpacking a concatenation, with no JSON parse.
 *
 * A stored text starting with `{"id":` is a whole request (written by an older version, or a
 * request whose keys came in another order) and is read as it is.
 */

const WHOLE = '{"id":'

/** @internal The column text for the request JSON `json` whose id and kind are `id`, `kind`. */
export function packPending(json: string | null, id: string | null, kind: string | null): string | null {
  if (json === null || id === null || kind === null) return json
  const prefix = `${WHOLE}${JSON.stringify(id)},"kind":${JSON.stringify(kind)}`
  if (json.startsWith(prefix)) {
    const next = json[prefix.length]
    if (next === "}") return "{}"
    if (next === ",") return `{${json.slice(prefix.length + 1)}`
  }
  // Not the expected layout: stored whole, and it starts with `{"id":` so it reads back as is
  // (a duplicated `id` key carries the same value, so the parsed request is the same).
  return json.startsWith(WHOLE) ? json : `${WHOLE}${JSON.stringify(id)},${json.slice(1)}`
}

/** @internal The request JSON of a stored `pending` column, its id and kind put back. */
export function unpackPending(text: string | null, id: string | null, kind: string | null): string | null {
  if (text === null || id === null || kind === null || text.startsWith(WHOLE) || text[0] !== "{") return text
  const head = `${WHOLE}${JSON.stringify(id)},"kind":${JSON.stringify(kind)}`
  return text === "{}" ? `${head}}` : `${head},${text.slice(1)}`
}
