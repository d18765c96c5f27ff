import { ConfigError } from "../errors.js"
import type { JSONSchema, Tool, ToolContext, ToolResult } from "../types.js"
import { assertToolName } from "./tool-name.js"
import { isPlainObject } from "../internal/plain-object.js"
import { isThenable } from "../internal/thenable.js"
import { compileSchema, formatSchemaIssues } from "./json-schema-validator.js"

/**
 * The subset of a Zod 4 schema toolnexus uses: Standard Schema validation and JSON Schema
 * export. Zod is an optional peer dependency and is never imported by toolnexus itself.
 */
export interface ZodLikeSchema<Output = unknown> {
  /** The Standard Schema interface; its presence (with `validate`) is how a Zod schema is recognised. */
  "~standard": {
    /** Validates the model's arguments: the parsed value, or issues that become an `isError` result. */
    validate(value: unknown): StandardResult<Output> | Promise<StandardResult<Output>>
    /** Type-only: carries the schema's types for inference; never read at run time. */
    types?: {
      /** The type the schema accepts. */
      input: unknown
      /** The parsed type, which `run` receives as `args`. */
      output: Output
    }
  }
  /**
   * Zod's JSON Schema export (zod 4.1 and later), called once to build the tool's `inputSchema`
   * (its `$schema` dropped); without it `defineTool` throws `ConfigError`.
   */
  toJSONSchema?: () => Record<string, unknown>
}

type StandardResult<Output> =
  | { value: Output; issues?: undefined }
  | { issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> }> }

/** What a tool's `run` may return: a string (an ordinary result) or a full {@link ToolResult}. */
export type ToolReturn = string | ToolResult

/** The definition passed to {@link defineTool}. */
export interface ToolDefinition<Args> {
  /** The name the model calls the tool by: 1 to 64 letters, digits, `_` or `-`. */
  name: string
  /** What the tool does, for the model: it decides when to call the tool from this. */
  description: string
  /**
   * The arguments' schema: a JSON Schema object (arguments validated against it) or a Zod 4
   * schema (validated, parsed, and exported as JSON Schema for the model).
   */
  inputSchema: JSONSchema | ZodLikeSchema<Args>
  /**
   * Runs the tool on validated arguments; a string is an ordinary result. A throw or rejection
   * becomes an `isError` result with the error's message.
   */
  run(args: Args, ctx: ToolContext): ToolReturn | Promise<ToolReturn>
  /**
   * Calls first suspend for a human's approval (`kind: "approval"`, `data {tool, args, callId,
   * argsHash}`) and `run` only once approved, with exactly the arguments the approver saw; a
   * decline becomes the `declined: …` result. `true` for every call, or a function of the
   * arguments deciding per call (a throw or rejection asks). `run` never sees the approval.
   */
  needsApproval?: boolean | ((args: Args, ctx: ToolContext) => boolean | Promise<boolean>)
  /**
   * The approver may replace the arguments with `answer.data.args`: validated against
   * `inputSchema` (invalid ⇒ `AnswerInvalidError`, nothing runs) and recorded in the result's
   * `metadata.approval.editedArgs`. Default `false`: an answer carrying arguments is refused.
   */
  editableArgs?: boolean
  /**
   * The approval request's prompt for a call, e.g. ``({ amount }) => `Pay ${amount} USD?` ``;
   * default `Approve <name> with <arguments as JSON>?`. A throw falls back to the default.
   */
  approvalPrompt?: (args: Args) => string
}

/**
 * Defines a native tool. `inputSchema` is a JSON Schema object or a Zod 4 schema; with Zod,
 * arguments are validated before `run` and `run` is typed. Invalid arguments and thrown
 * errors become `isError` results the model can read and correct; they never crash a run.
 * With `needsApproval`, calls made through a toolkit suspend for approval before `run` (§19).
 *
 * @throws ConfigError for an invalid name, schema, `needsApproval` or `editableArgs`.
 * @example
 * const add = defineTool({
 *   name: "add", description: "Add two numbers",
 *   inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
 *   run: ({ a, b }) => String(Number(a) + Number(b)),
 * })
 * const pay = defineTool({
 *   name: "pay", description: "Pay an amount", needsApproval: true,
 *   inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
 *   run: ({ amount }) => `paid ${amount}`,
 * })
 */
export function defineTool<S extends ZodLikeSchema>(
  def: ToolDefinition<NonNullable<S["~standard"]["types"]>["output"]> & { inputSchema: S },
): Tool
export function defineTool(def: ToolDefinition<Record<string, unknown>> & { inputSchema: JSONSchema }): Tool
export function defineTool(def: ToolDefinition<any>): Tool {
  assertToolName(def.name)
  if (typeof def.run !== "function") throw new ConfigError(`tool ${def.name}: "run" must be a function`)
  const zod = isZodLike(def.inputSchema) ? def.inputSchema : undefined
  const inputSchema = zod ? zodToJSONSchema(def.name, zod) : def.inputSchema
  if (!isPlainObject(inputSchema)) throw new ConfigError(`tool ${def.name}: "inputSchema" must be an object`)
  const validate = zod ? undefined : compileToolSchema(def.name, inputSchema)
  const { run } = def
  const tool: Tool = {
    name: def.name,
    description: String(def.description ?? ""),
    inputSchema,
    source: "native",
    execute(args, ctx = {}) {
      if (zod) return executeZod(zod, run, args, ctx)
      const issues = validate!(args, "args")
      if (issues.length) return { output: `invalid arguments: ${formatSchemaIssues(issues)}`, isError: true }
      return settle(run, args, ctx)
    },
  }
  if (def.needsApproval !== undefined || def.editableArgs !== undefined || def.approvalPrompt !== undefined)
    setApprovalOptions(def, tool)
  return tool
}

/**
 * The approval options of a tool that declares any, checked and set on `tool` (compiled only
 * then). Set only when declared: the toolkit's approval gate reads them (one gate for every tool).
 */
function setApprovalOptions(def: ToolDefinition<any>, tool: Tool): void {
  const { needsApproval, editableArgs, approvalPrompt } = def
  if (
    needsApproval !== undefined &&
    typeof needsApproval !== "boolean" &&
    typeof needsApproval !== "function"
  ) {
    throw new ConfigError(`tool ${def.name}: "needsApproval" must be a boolean or a function`)
  }
  if (editableArgs !== undefined && typeof editableArgs !== "boolean") {
    throw new ConfigError(`tool ${def.name}: "editableArgs" must be a boolean`)
  }
  if (approvalPrompt !== undefined && typeof approvalPrompt !== "function") {
    throw new ConfigError(`tool ${def.name}: "approvalPrompt" must be a function`)
  }
  if (needsApproval !== undefined) tool.needsApproval = needsApproval
  if (editableArgs !== undefined) tool.editableArgs = editableArgs
  if (approvalPrompt !== undefined) tool.approvalPrompt = approvalPrompt
}

async function executeZod(
  zod: ZodLikeSchema,
  run: ToolDefinition<any>["run"],
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<ToolResult> {
  const checked = await zod["~standard"].validate(args)
  if (checked.issues) return { output: `invalid arguments: ${formatIssues(checked.issues)}`, isError: true }
  return settle(run, checked.value, ctx)
}

/**
 * Runs `run` and normalises its return. A synchronous `run` stays synchronous (no await in
 * the tool loop for it); a throw or a rejection becomes an error result.
 */
function settle(
  run: ToolDefinition<any>["run"],
  input: unknown,
  ctx: ToolContext,
): ToolResult | Promise<ToolResult> {
  let value: ToolReturn | Promise<ToolReturn>
  try {
    value = run(input, ctx)
  } catch (error) {
    return thrownResult(error)
  }
  // A string, the common return, becomes its result here: a cold resume's first run of a tool
  // then compiles no `toToolResult`.
  if (typeof value === "string") return { output: value, isError: false }
  return isThenable(value) ? Promise.resolve(value).then(toToolResult, thrownResult) : toToolResult(value)
}

/** @internal A thrown error or rejection as an error result the model can read. */
export function thrownResult(error: unknown): ToolResult {
  return { output: error instanceof Error ? error.message : String(error), isError: true }
}

/** @internal Normalises what a `run` returned. */
export function toToolResult(value: ToolReturn): ToolResult {
  if (typeof value === "string") return { output: value, isError: false }
  if (isPlainObject(value) && typeof value.output === "string") {
    return { ...value, isError: value.isError === true }
  }
  return { output: value === undefined ? "" : JSON.stringify(value), isError: false }
}

function compileToolSchema(name: string, schema: JSONSchema) {
  try {
    return compileSchema(schema)
  } catch (error) {
    throw new ConfigError(`tool ${name}: ${(error as Error).message}`, { cause: error })
  }
}

/** @internal */
export function isZodLike(schema: unknown): schema is ZodLikeSchema {
  return isPlainObject(schema) && typeof (schema["~standard"] as any)?.validate === "function"
}

function zodToJSONSchema(name: string, schema: ZodLikeSchema): JSONSchema {
  if (typeof schema.toJSONSchema !== "function") {
    throw new ConfigError(`tool ${name}: the schema validates but cannot export JSON Schema; use zod >= 4.1`)
  }
  const { $schema: _dialect, ...json } = schema.toJSONSchema()
  return json
}

/** @internal Zod / Standard Schema issues as one line. */
export function formatIssues(
  issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<unknown> }>,
): string {
  return issues
    .map((issue) => {
      const path = (issue.path ?? []).map((p) => (isPlainObject(p) ? String(p.key) : String(p))).join(".")
      return path ? `${path}: ${issue.message}` : issue.message
    })
    .join("; ")
}
