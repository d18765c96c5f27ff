import type { Json, Style } from "./fixture.js"

/**
 * Partial matching of an observed value against an expectation from a fixture.
 *
 * - a scalar must be equal (`null` also accepts an absent value);
 * - an array must have the same length and match element by element;
 * - an object must have every listed key matching (other keys are ignored);
 * - an object whose keys all start with `$` is a matcher: `$contains` (substring, or element
 *   of an array), `$regex`, `$length`, `$absent`, `$any`, `$style` (`{openai, anthropic, "openai-responses"}`),
 *   `$exact` (the value's JSON text, key order included, equals the argument's: byte for byte).
 *
 * Returns the mismatches as `path: problem` lines (empty when it matches).
 */
export function match(expected: Json, actual: unknown, path: string, style: Style): string[] {
  const problems: string[] = []
  visit(expected, actual, path)
  return problems

  function visit(exp: Json, act: unknown, at: string): void {
    if (isMatcher(exp)) {
      matcher(exp, act, at)
      return
    }
    if (exp === null) {
      if (act !== null && act !== undefined) problems.push(`${at}: expected nothing, got ${show(act)}`)
      return
    }
    if (Array.isArray(exp)) {
      if (!Array.isArray(act)) {
        problems.push(`${at}: expected an array of ${exp.length}, got ${show(act)}`)
        return
      }
      if (act.length !== exp.length) {
        problems.push(`${at}: expected ${exp.length} items, got ${act.length}: ${show(act)}`)
        return
      }
      for (const [i, item] of exp.entries()) visit(item, act[i], `${at}[${i}]`)
      return
    }
    if (typeof exp === "object") {
      if (typeof act !== "object" || act === null || Array.isArray(act)) {
        problems.push(`${at}: expected an object, got ${show(act)}`)
        return
      }
      for (const [key, value] of Object.entries(exp as { [key: string]: Json })) {
        visit(value, (act as Record<string, unknown>)[key], `${at}.${key}`)
      }
      return
    }
    if (act !== exp) problems.push(`${at}: expected ${show(exp)}, got ${show(act)}`)
  }

  function matcher(exp: { [key: string]: Json }, act: unknown, at: string): void {
    for (const [op, arg] of Object.entries(exp)) {
      switch (op) {
        case "$any":
          if (act === undefined) problems.push(`${at}: expected a value, got nothing`)
          break
        case "$absent":
          if (act !== undefined) problems.push(`${at}: expected no value, got ${show(act)}`)
          break
        case "$contains":
          if (typeof act === "string") {
            if (typeof arg !== "string" || !act.includes(arg))
              problems.push(`${at}: expected a string containing ${show(arg)}, got ${show(act)}`)
          } else if (Array.isArray(act)) {
            if (!act.some((item) => match(arg, item, at, style).length === 0))
              problems.push(`${at}: expected an element matching ${show(arg)}, got ${show(act)}`)
          } else problems.push(`${at}: $contains needs a string or an array, got ${show(act)}`)
          break
        case "$regex":
          if (typeof act !== "string" || !new RegExp(String(arg)).test(act))
            problems.push(`${at}: expected a string matching /${arg}/, got ${show(act)}`)
          break
        case "$length": {
          const length = typeof act === "string" || Array.isArray(act) ? act.length : undefined
          if (length !== arg) problems.push(`${at}: expected length ${arg}, got ${length ?? show(act)}`)
          break
        }
        case "$exact":
          if (JSON.stringify(act) !== JSON.stringify(arg))
            problems.push(`${at}: expected exactly ${show(arg)}, got ${show(act)}`)
          break
        case "$style": {
          const chosen = (arg as { [key: string]: Json } | null)?.[style]
          if (chosen === undefined) problems.push(`${at}: $style gives no expectation for ${style}`)
          else visit(chosen, act, at)
          break
        }
        default:
          problems.push(`${at}: unknown matcher ${op}`)
      }
    }
  }
}

function isMatcher(value: Json): value is { [key: string]: Json } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const keys = Object.keys(value)
  return keys.length > 0 && keys.every((k) => k.startsWith("$"))
}

/** A short rendering of an observed value for failure messages. */
export function show(value: unknown): string {
  if (value === undefined) return "nothing"
  const text = JSON.stringify(value)
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}
