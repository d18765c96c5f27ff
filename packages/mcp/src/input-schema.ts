import type { JSONSchema } from "@toolnexus/core"
import { isPlainObject } from "./config.js"

const WRAPPED_KEY = "input"

/**
 * @internal Providers accept only object schemas for tool arguments, and MCP sends arguments
 * as an object whatever the schema says. A server's object schema is kept (with `properties`
 * filled in when missing); a missing one means "no arguments"; any other schema
 * (`{type:"string"}`, an array schema, `true`) becomes the single required property `input`, so
 * the model still learns the value's shape and the server receives `{input: value}`.
 */
export function toolSchemaOf(schema: unknown): JSONSchema {
  if (
    schema === undefined ||
    schema === null ||
    (isPlainObject(schema) && Object.keys(schema).length === 0)
  ) {
    return { type: "object", properties: {} }
  }
  if (isPlainObject(schema) && isObjectSchema(schema)) {
    const { $schema: _dialect, ...rest } = schema
    return isPlainObject(rest.properties) ? rest : { ...rest, type: "object", properties: {} }
  }
  const { $schema: _dialect, ...inner } = isPlainObject(schema) ? schema : {}
  return {
    type: "object",
    properties: { [WRAPPED_KEY]: inner },
    required: [WRAPPED_KEY],
    additionalProperties: false,
  }
}

/**
 * @internal Whether a schema describes an object: `type: "object"`, or no `type` but object
 * keywords (`properties`, `required`), as JSON Schema 2020-12 schemas often leave it implied.
 */
export function isObjectSchema(schema: Record<string, unknown>): boolean {
  const type = schema.type
  if (type === "object") return true
  // Schemas without `type` that still describe an object by their keywords.
  return type === undefined && (isPlainObject(schema.properties) || Array.isArray(schema.required))
}
