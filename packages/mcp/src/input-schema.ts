import type { JSONSchema } from "@toolnexus/core"
import { isPlainObject } from "./config.js"

/** @internal A server's schema as the model sees it, and how to turn the model's args back. */
export interface ToolSchema {
  inputSchema: JSONSchema
  /** Set when the server's schema is not an object schema: the model's `{[key]: v}` is sent as `v`. */
  wrappedKey?: string
}

const WRAPPED_KEY = "input"

/**
 * @internal Providers accept only object schemas for tool arguments. A server's object schema
 * is kept (with `properties` filled in when missing); a missing one means "no arguments"; any
 * other schema (`{type:"string"}`, an array schema, `true`) is wrapped as the single property
 * `input`, whose value is what the server receives.
 */
export function toolSchemaOf(schema: unknown): ToolSchema {
  if (schema === undefined || schema === null || (isPlainObject(schema) && Object.keys(schema).length === 0)) {
    return { inputSchema: { type: "object", properties: {} } }
  }
  if (isPlainObject(schema) && isObjectSchema(schema)) {
    const { $schema: _dialect, ...rest } = schema
    return { inputSchema: isPlainObject(rest.properties) ? rest : { ...rest, type: "object", properties: {} } }
  }
  const inner = isPlainObject(schema) ? schema : {}
  return {
    inputSchema: {
      type: "object",
      properties: { [WRAPPED_KEY]: inner },
      required: [WRAPPED_KEY],
      additionalProperties: false,
    },
    wrappedKey: WRAPPED_KEY,
  }
}

function isObjectSchema(schema: Record<string, unknown>): boolean {
  const type = schema.type
  if (type === "object") return true
  // Schemas without `type` that still describe an object by their keywords.
  return type === undefined && (isPlainObject(schema.properties) || Array.isArray(schema.required))
}
