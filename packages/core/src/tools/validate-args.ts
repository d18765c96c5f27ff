import type { JSONSchema } from "../types.js"

/**
 * @internal A small JSON Schema check of tool arguments: required properties, primitive
 * `type`s and `enum`s, recursively for nested objects and array items. It catches what
 * models get wrong in practice; it is not a full validator. Returns the first problem.
 */
export function checkArgs(schema: JSONSchema, value: unknown, path = "arguments"): string | undefined {
  const type = schema.type
  if (typeof type === "string" && !hasType(type, value))
    return `${path} must be ${type}, got ${describe(value)}`
  if (Array.isArray(type) && !type.some((t) => typeof t === "string" && hasType(t, value))) {
    return `${path} must be ${type.join(" or ")}, got ${describe(value)}`
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) {
    return `${path} must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`
  }
  if (isPlainObject(value)) {
    const properties = isPlainObject(schema.properties) ? schema.properties : {}
    if (Array.isArray(schema.required)) {
      for (const key of schema.required) {
        if (typeof key === "string" && !(key in value)) return `${path}.${key} is required`
      }
    }
    for (const [key, sub] of Object.entries(properties)) {
      if (key in value && isPlainObject(sub)) {
        const problem = checkArgs(sub, value[key], `${path}.${key}`)
        if (problem) return problem
      }
    }
  } else if (Array.isArray(value) && isPlainObject(schema.items)) {
    for (let i = 0; i < value.length; i++) {
      const problem = checkArgs(schema.items, value[i], `${path}[${i}]`)
      if (problem) return problem
    }
  }
  return undefined
}

function hasType(type: string, value: unknown): boolean {
  switch (type) {
    case "object":
      return isPlainObject(value)
    case "array":
      return Array.isArray(value)
    case "string":
      return typeof value === "string"
    case "number":
      return typeof value === "number" && Number.isFinite(value)
    case "integer":
      return Number.isInteger(value)
    case "boolean":
      return typeof value === "boolean"
    case "null":
      return value === null
    default:
      return true
  }
}

function describe(value: unknown): string {
  if (value === null) return "null"
  if (Array.isArray(value)) return "array"
  return typeof value
}

/** @internal */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}
