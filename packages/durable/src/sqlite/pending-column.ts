/**
 * The `pending` column of a SQLite conversation row stores the request without its `id` and
 * `kind`: both are already in their own columns (`pending_id`, `pending_kind`, which the
 * indexes need), and repeating them cost ~65 B of every parked run. Three forms, told apart by
 * their first characters, all readable by this version:
 *
 * | form | text | written for |
 * |---|---|---|
 * | 3, stamped | `[prompt, callId, tool, args]` or `[prompt, callId, tool, args, {…the tool's own data keys}]` | a tool suspension, `{ id, kind, prompt, data: { callId, tool, args, … } }` (§8's stamps), nothing else |
 * | 2, keyed | `{"prompt":…,"data":…}`: the JSON with its leading `"id":…,"kind":…` cut | any other request whose first keys are `id` and `kind` |
 * | 1, whole | `{"id":…}`: the whole request JSON | any other key order; rows of older versions |
 *
 * The stamped form drops the key names of the commonest request (~40 B of a parked run's
 * row). It is written only when unpacking it gives back the very same JSON text, so every
 * reader sees what was saved, byte for byte. It came with schema version 6 (migration 6 only
 * moves the version), so a store that cannot read it refuses the database when it opens it.
 */

const WHOLE = '{"id":'

/** @internal The column text for the request JSON `json` whose id and kind are `id`, `kind`. */
export function packPending(json: string | null, id: string | null, kind: string | null): string | null {
  if (json === null || id === null || kind === null) return json
  const stamped = packStamped(json, id, kind)
  if (stamped !== undefined) return stamped
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
  if (text === null || id === null || kind === null) return text
  if (text[0] === "[") return unpackStamped(text, id, kind) ?? text
  if (text.startsWith(WHOLE) || text[0] !== "{") return text
  const head = `${WHOLE}${JSON.stringify(id)},"kind":${JSON.stringify(kind)}`
  return text === "{}" ? `${head}}` : `${head},${text.slice(1)}`
}

/** The stamped form of request JSON `json`, or `undefined` when it does not round-trip exactly. */
function packStamped(json: string, id: string, kind: string): string | undefined {
  // Cheap refusals first: most saves park a tool suspension, anything else skips the parse.
  if (!json.includes('"data":{"callId":')) return undefined
  let request: Record<string, unknown>
  try {
    request = JSON.parse(json)
  } catch {
    return undefined
  }
  const keys = Object.keys(request)
  if (
    keys.length !== 4 ||
    keys[0] !== "id" ||
    keys[1] !== "kind" ||
    keys[2] !== "prompt" ||
    keys[3] !== "data"
  )
    return undefined
  if (request.id !== id || request.kind !== kind || typeof request.prompt !== "string") return undefined
  const data = request.data as Record<string, unknown>
  const { callId, tool, args, ...own } = data
  if (typeof callId !== "string" || typeof tool !== "string" || args === undefined) return undefined
  const packed: unknown[] = [request.prompt, callId, tool, args]
  if (Object.keys(own).length > 0) packed.push(own)
  const text = JSON.stringify(packed)
  return unpackStamped(text, id, kind) === json ? text : undefined
}

/**
 * @internal The request a stored `pending` column holds when it is in the stamped form, built
 * without JSON text in between: the object `JSON.parse(unpackPending(text, id, kind))` gives
 * for every text this store writes (the same keys in the same order, its values parsed from
 * `text`), for a reader that wants the request, not its text (a resume's claim and
 * `getPending` parsed the text they had just made). `undefined` for the other forms and for a
 * text that is not a stamped one: such a reader then unpacks and decodes the text, with its errors.
 */
export function stampedRequest(
  text: string | null,
  id: string | null,
  kind: string | null,
): { id: string; kind: string; prompt: string; data: Record<string, unknown> } | undefined {
  if (text === null || text[0] !== "[" || typeof id !== "string" || typeof kind !== "string") return undefined
  let packed: unknown
  try {
    packed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!Array.isArray(packed) || (packed.length !== 4 && packed.length !== 5)) return undefined
  const [prompt, callId, tool, args, own] = packed
  if (typeof prompt !== "string" || typeof callId !== "string" || typeof tool !== "string") return undefined
  if (packed.length === 5 && (typeof own !== "object" || own === null || Array.isArray(own))) return undefined
  // A plain literal (computed keys were defined one by one at run time, on every read).
  const data: Record<string, unknown> = { callId, tool, args }
  return { id, kind, prompt, data: packed.length === 5 ? { ...data, ...(own as object) } : data }
}

/** The request JSON of a stamped-form text, or `undefined` when the text is not one. */
function unpackStamped(text: string, id: string, kind: string): string | undefined {
  const request = stampedRequest(text, id, kind)
  return request && JSON.stringify(request)
}
