import { isRef } from "./fixture.js"

/** A `$name.path` reference that resolves to nothing: a mistake in the fixture, not in the package. */
export class DanglingReferenceError extends Error {
  override readonly name = "DanglingReferenceError"
}

/**
 * Replaces every `"$name.path"` string inside `value` with the value saved under `name`
 * (following `path` through objects and arrays). A reference to nothing is an error, so a
 * typo cannot quietly pass `undefined` to the package under test.
 */
export function resolveRefs(value: unknown, env: ReadonlyMap<string, unknown>, field: string): unknown {
  if (isRef(value)) return lookup(value, env, field)
  if (Array.isArray(value)) return value.map((item, i) => resolveRefs(item, env, `${field}[${i}]`))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[key] = resolveRefs(item, env, `${field}.${key}`)
    return out
  }
  return value
}

function lookup(ref: string, env: ReadonlyMap<string, unknown>, field: string): unknown {
  const [name, ...path] = ref.slice(1).split(".") as [string, ...string[]]
  if (!env.has(name)) {
    const known = [...env.keys()].map((k) => `$${k}`).join(", ") || "none"
    throw new DanglingReferenceError(`${field}: ${ref} refers to nothing saved (saved so far: ${known})`)
  }
  let current = env.get(name)
  for (const [i, key] of path.entries()) {
    const next =
      typeof current === "object" && current !== null ? (current as Record<string, unknown>)[key] : undefined
    if (next === undefined) {
      const at = `$${[name, ...path.slice(0, i + 1)].join(".")}`
      throw new DanglingReferenceError(`${field}: ${ref} resolves to nothing (${at} is absent)`)
    }
    current = next
  }
  return current
}

/** Fills `{name}` placeholders from `vars`; a placeholder without a value is left as written. */
export function render(template: string, vars: Record<string, unknown>): string {
  return template.replace(/\{([^{}\s]+)\}/g, (whole, name: string) => {
    const value = vars[name]
    if (value === undefined) return whole
    return typeof value === "string" ? value : JSON.stringify(value)
  })
}

/** A JSON round trip: what a host would store, send, or read back in another process. */
export function roundTrip<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T)
}
