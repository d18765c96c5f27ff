import { ConfigError } from "../errors.js"
import type { OutputFormat } from "../providers/wire-format.js"
import { type ZodLikeSchema, formatIssues, isZodLike } from "../tools/define-tool.js"
import { isPlainObject } from "../internal/plain-object.js"
import { compileSchema, formatSchemaIssues } from "../tools/json-schema-validator.js"
import type { JSONSchema } from "../types.js"

/** What `output` accepts: a Zod 4 schema (typed result) or a JSON Schema object. */
export type OutputSchema = ZodLikeSchema | JSONSchema

/** The type `result.output` has for an `output` schema: the Zod output type, else `unknown`. */
export type OutputOf<S> = S extends ZodLikeSchema ? NonNullable<S["~standard"]["types"]>["output"] : unknown

/** @internal A structured-output request, prepared once per run. */
export interface OutputSpec {
  format: OutputFormat
  /** Parses and validates the final answer's text. */
  check(text: string): Promise<{ ok: true; value: unknown } | { ok: false; problem: string }>
}

/**
 * @internal Prepares an `output` schema: the JSON Schema sent to the provider and the check
 * of the reply.
 *
 * @throws ConfigError when `schema` is neither a Zod schema nor a JSON Schema object.
 */
export function outputSpec(schema: OutputSchema): OutputSpec {
  const zod = isZodLike(schema) ? schema : undefined
  let json: JSONSchema
  if (zod) {
    if (typeof zod.toJSONSchema !== "function")
      throw new ConfigError("output: the schema validates but cannot export JSON Schema; use zod >= 4.1")
    const { $schema: _dialect, ...rest } = zod.toJSONSchema()
    json = rest
  } else if (isPlainObject(schema)) json = schema
  else throw new ConfigError("output must be a Zod schema or a JSON Schema object")
  const validate = zod ? zodProblem(zod) : schemaProblem(json)
  return {
    format: {
      name: typeof json.title === "string" && /^[\w-]{1,64}$/.test(json.title) ? json.title : "output",
      schema: json,
    },
    async check(text) {
      let value: unknown
      try {
        value = JSON.parse(stripFence(text))
      } catch (error) {
        return { ok: false, problem: `the reply is not JSON (${(error as Error).message})` }
      }
      return validate(value)
    },
  }
}

/** @internal The user turn asking the model, once, to correct an invalid structured answer. */
export function correctionPrompt(problem: string): string {
  return (
    `Your previous reply does not match the required JSON schema: ${problem}. ` +
    "Reply again with only the corrected JSON value."
  )
}

/**
 * The one place a JSON Schema check is made for structured output: the schema is compiled
 * once per run, and a schema the validator cannot read is the caller's ConfigError.
 */
function schemaProblem(schema: JSONSchema) {
  let check: ReturnType<typeof compileSchema>
  try {
    check = compileSchema(schema)
  } catch (error) {
    throw new ConfigError(`output: ${(error as Error).message}`, { cause: error })
  }
  return async (value: unknown): Promise<{ ok: true; value: unknown } | { ok: false; problem: string }> => {
    const issues = check(value, "output")
    return issues.length === 0 ? { ok: true, value } : { ok: false, problem: formatSchemaIssues(issues) }
  }
}

function zodProblem(schema: ZodLikeSchema) {
  return async (value: unknown): Promise<{ ok: true; value: unknown } | { ok: false; problem: string }> => {
    const checked = await schema["~standard"].validate(value)
    if (!checked.issues) return { ok: true, value: checked.value }
    return { ok: false, problem: formatIssues(checked.issues) }
  }
}

/** Models sometimes wrap JSON in a Markdown fence even when asked for JSON only. */
function stripFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/.exec(text)
  return fenced ? (fenced[1] as string) : text
}
