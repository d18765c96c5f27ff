import type { Request } from "@toolnexus/core"

/** What an inbox shows about a request and which ways of answering it offers. */
export interface RequestDescription {
  /** The tool that asked: `data.tool`, or `server › tool` for an MCP request; absent when unknown. */
  tool?: string
  /** The call's arguments (`data.args`); for requests that predate the loop's stamps, the other data keys. */
  args?: Record<string, unknown>
  /** The agent path for a request escalated through a sub-agent tree (`data.path`), e.g. `["root", "lead.1"]`. */
  path: string[]
  /** The form a human fills in, for `input` requests that carry `data.schema` (MCP elicitations too). */
  schema?: FormSchema
  /** Argument names the approver may change before approving; empty when the tool allows no edit. */
  editable: string[]
  /** How the request is answered in the inbox. */
  mode: "approve" | "form" | "text" | "authorize"
}

/** The subset of JSON Schema an inbox form can render: an object of scalar properties. */
export interface FormSchema {
  properties: Record<string, FormField>
  required: string[]
}

/** One field of a {@link FormSchema}. */
export interface FormField {
  type: "string" | "number" | "integer" | "boolean"
  title?: string
  description?: string
  enum?: (string | number)[]
  default?: unknown
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  format?: string
}

// The loop's own bookkeeping and the keys this module interprets; none is an argument.
const RESERVED = new Set(["callId", "tool", "args", "path", "schema", "editable", "server", "annotations"])

/**
 * Reads what is being decided from a request's self-describing `data` (DESIGN §8: the loop
 * stamps `tool`, `args` and `callId`; escalation adds `path`; MCP elicitations carry
 * `server`, `tool` and `schema`). Never throws: unexpected shapes are simply not shown.
 */
export function describeRequest(request: Request): RequestDescription {
  const data = request.data ?? {}
  const server = typeof data.server === "string" ? data.server : undefined
  const toolName = typeof data.tool === "string" ? data.tool : undefined
  const tool = server && toolName ? `${server} › ${toolName}` : (toolName ?? server)
  const args = isPlainObject(data.args) ? data.args : legacyArgs(data)
  const path = Array.isArray(data.path) ? data.path.filter((p): p is string => typeof p === "string") : []
  const schema = request.kind === "input" ? formSchemaOf(data.schema) : undefined
  const description: RequestDescription = {
    path,
    editable: editableOf(data.editable, args),
    mode: modeOf(request.kind, schema),
  }
  if (tool !== undefined) description.tool = tool
  if (args !== undefined) description.args = args
  if (schema !== undefined) description.schema = schema
  return description
}

function modeOf(kind: string, schema: FormSchema | undefined): RequestDescription["mode"] {
  if (schema) return "form"
  if (kind === "input" || kind === "question" || kind === "tool_call") return "text"
  if (kind === "authorization") return "authorize"
  return "approve"
}

/** Requests that predate the loop's `args` stamp carry the arguments as loose data keys. */
function legacyArgs(data: Record<string, unknown>): Record<string, unknown> | undefined {
  const entries = Object.entries(data).filter(([key]) => !RESERVED.has(key))
  return entries.length === 0 ? undefined : Object.fromEntries(entries)
}

/** `data.editable`: `true` (every argument) or a list of argument names; only existing scalar arguments count. */
function editableOf(raw: unknown, args: Record<string, unknown> | undefined): string[] {
  if (!args) return []
  const names = raw === true ? Object.keys(args) : Array.isArray(raw) ? raw : []
  return names.filter(
    (name): name is string => typeof name === "string" && name in args && isScalar(args[name]),
  )
}

/** The renderable part of a JSON Schema; `undefined` when it is not an object schema with scalar properties. */
export function formSchemaOf(raw: unknown): FormSchema | undefined {
  if (!isPlainObject(raw) || !isPlainObject(raw.properties)) return undefined
  const properties: Record<string, FormField> = {}
  for (const [name, spec] of Object.entries(raw.properties)) {
    const field = fieldOf(spec)
    if (field) properties[name] = field
  }
  if (Object.keys(properties).length === 0) return undefined
  const required = Array.isArray(raw.required)
    ? raw.required.filter((name): name is string => typeof name === "string" && name in properties)
    : []
  return { properties, required }
}

function fieldOf(spec: unknown): FormField | undefined {
  if (!isPlainObject(spec)) return undefined
  const type = spec.type
  const enumValues = Array.isArray(spec.enum)
    ? spec.enum.filter((v): v is string | number => typeof v === "string" || typeof v === "number")
    : undefined
  if (type !== "string" && type !== "number" && type !== "integer" && type !== "boolean") {
    if (!enumValues?.length) return undefined
  }
  const field: FormField = {
    type: type === "number" || type === "integer" || type === "boolean" ? type : "string",
  }
  for (const key of ["title", "description", "format"] as const) {
    if (typeof spec[key] === "string") field[key] = spec[key] as string
  }
  for (const key of ["minimum", "maximum", "minLength", "maxLength"] as const) {
    if (typeof spec[key] === "number") field[key] = spec[key] as number
  }
  if (enumValues?.length) field.enum = enumValues
  if (spec.default !== undefined) field.default = spec.default
  return field
}

/**
 * Checks form values against a {@link FormSchema} and converts them to the schema's types.
 *
 * @returns the typed values, or the first problem as a sentence.
 */
export function coerceFormValues(
  schema: FormSchema,
  values: Record<string, unknown>,
): { ok: true; data: Record<string, unknown> } | { ok: false; problem: string } {
  const data: Record<string, unknown> = {}
  for (const [name, field] of Object.entries(schema.properties)) {
    const raw = values[name]
    const empty = raw === undefined || raw === null || raw === ""
    if (empty) {
      if (field.type === "boolean") data[name] = false
      else if (schema.required.includes(name)) return { ok: false, problem: `"${name}" is required` }
      continue
    }
    const value = coerceScalar(field, raw)
    if (value === undefined) return { ok: false, problem: `"${name}" must be ${article(field.type)}` }
    const problem = violation(name, field, value)
    if (problem) return { ok: false, problem }
    data[name] = value
  }
  return { ok: true, data }
}

function coerceScalar(field: FormField, raw: unknown): unknown {
  if (field.type === "boolean") return typeof raw === "boolean" ? raw : raw === "true" || raw === "on"
  if (field.type === "number" || field.type === "integer") {
    const n = typeof raw === "number" ? raw : typeof raw === "string" ? Number(raw.trim()) : Number.NaN
    if (!Number.isFinite(n) || (field.type === "integer" && !Number.isInteger(n))) return undefined
    return n
  }
  return typeof raw === "string" ? raw : typeof raw === "number" ? String(raw) : undefined
}

function violation(name: string, field: FormField, value: unknown): string | undefined {
  if (field.enum && !field.enum.includes(value as string | number)) {
    return `"${name}" must be one of ${field.enum.map((v) => JSON.stringify(v)).join(", ")}`
  }
  if (typeof value === "number") {
    if (field.minimum !== undefined && value < field.minimum) return `"${name}" must be ≥ ${field.minimum}`
    if (field.maximum !== undefined && value > field.maximum) return `"${name}" must be ≤ ${field.maximum}`
  }
  if (typeof value === "string") {
    if (field.minLength !== undefined && value.length < field.minLength) {
      return `"${name}" needs at least ${field.minLength} characters`
    }
    if (field.maxLength !== undefined && value.length > field.maxLength) {
      return `"${name}" allows at most ${field.maxLength} characters`
    }
  }
  return undefined
}

function article(type: FormField["type"]): string {
  return type === "integer" ? "an integer" : `a ${type}`
}

/** True for a JSON scalar an inbox can edit in a single input. */
export function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean"
}

/** True for a plain JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}
